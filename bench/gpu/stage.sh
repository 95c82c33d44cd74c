#!/bin/bash
# Stages a GPU run: builds here what a run's run.sh needs and puts it in .gpu/ (ignored), for the
# device tool's `run` with carry [".gpu", ".gl"]. Run from the repository root:
#   bash bench/gpu/stage.sh RUN_DIR [OLD_REV] [BINARY...]
# RUN_DIR: the run's folder (holding run.sh, whose `Invoked as` line is the command to give `run`).
# OLD_REV: also the release perf tool of that revision, as .gpu/perf_old (built in a worktree of
#   its own under /tmp; "-" for none).
# BINARY...: the test binaries to stage (`lib` is the library's unit tests, any other name an
#   integration test of tests/); every one where none is named.
# .gpu/ then holds bins.tar.xz (the stripped binaries and perf, which run.sh unpacks), env.sh,
# steps.sh, anchors.py and run.sh; .gl/ Debian's libvulkan1 (the loader env.sh installs there).
# Together they must stay under the 64 MiB `run` carries; the sizes are printed last.
set -euo pipefail
run_dir=${1:?usage: bash bench/gpu/stage.sh RUN_DIR [OLD_REV] [BINARY...]}
old=${2:--}
shift $(( $# < 2 ? $# : 2 ))
test -f "$run_dir/run.sh" || { echo "no $run_dir/run.sh" >&2; exit 1; }
json=$(mktemp)
cargo test --workspace --no-run --features slow,failpoints --message-format=json 2>/dev/null > "$json"
cargo build -q --release -p collectives-examples --example perf
rm -rf .gpu && mkdir -p .gpu/stage
WANT="$*" python3 - "$json" <<'PY'
import json, os, shutil, sys
want = set(os.environ["WANT"].split())
for line in open(sys.argv[1]):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") != "compiler-artifact" or not m.get("executable") or not m["profile"]["test"]:
        continue
    name, kind = m["target"]["name"], m["target"]["kind"][0]
    if (name, kind) == ("collectives", "lib"):
        name = "lib"
    elif kind != "test":
        continue
    if not want or name in want:
        shutil.copy(m["executable"], f".gpu/stage/{name}")
missing = want - set(os.listdir(".gpu/stage"))
if missing:
    sys.exit(f"no test binary named {sorted(missing)}")
PY
rm -f "$json"
cp target/release/examples/perf .gpu/stage/perf
if [ "$old" != "-" ]; then
  wt=/tmp/collectives-stage-old
  git worktree remove --force "$wt" 2>/dev/null || true
  git worktree add -q --detach "$wt" "$old"
  (cd "$wt" && cargo build -q --release -p collectives-examples --example perf)
  cp "$wt/target/release/examples/perf" .gpu/stage/perf_old
  git worktree remove --force "$wt"
fi
strip .gpu/stage/*
tar cJf .gpu/bins.tar.xz -C .gpu/stage . && rm -rf .gpu/stage
cp bench/gpu/env.sh bench/gpu/steps.sh bench/anchors.py "$run_dir/run.sh" .gpu/
if ! ls .gl/*.deb > /dev/null 2>&1; then
  mkdir -p .gl && (cd .gl && apt-get download libvulkan1)
fi
du -sh .gpu .gl
grep -m1 "Invoked as" .gpu/run.sh
