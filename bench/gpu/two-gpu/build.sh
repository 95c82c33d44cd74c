#!/bin/bash
# Builds what run.sh needs into .gpu/ at the repository root (run from there):
#   bash bench/gpu/two-gpu/build.sh
# then, on a two-GPU machine (kind nvidia-h200-x2), with carry [".gpu", ".gl"]:
#   timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
# .gl/ holds Debian's libvulkan1 .deb (mkdir -p .gl && cd .gl && apt-get download libvulkan1).
set -euo pipefail
cargo test --workspace --no-run --features slow,failpoints --message-format=json 2>/dev/null > /tmp/two-gpu-build.json
cargo build --release -p collectives-examples --example perf
rm -rf .gpu && mkdir -p .gpu/stage
python3 - <<'PY'
import json, shutil
want = {"lib", "device_groups", "typed", "cuda_copies"}
for line in open("/tmp/two-gpu-build.json"):
    try:
        m = json.loads(line)
    except ValueError:
        continue
    if m.get("reason") != "compiler-artifact" or not m.get("executable") or not m["profile"]["test"]:
        continue
    name, kind = m["target"]["name"], m["target"]["kind"][0]
    name = "lib" if (name, kind) == ("collectives", "lib") else name
    if name in want and (kind == "test" or name == "lib"):
        shutil.copy(m["executable"], f".gpu/stage/{name}")
PY
cp target/release/examples/perf .gpu/stage/perf
strip .gpu/stage/*
tar cJf .gpu/bins.tar.xz -C .gpu/stage . && rm -rf .gpu/stage
cp bench/gpu/env.sh bench/anchors.py bench/gpu/two-gpu/run.sh .gpu/
ls -la .gpu
