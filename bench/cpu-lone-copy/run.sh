#!/bin/bash
# A lone copy's realize before and after the direct path took it (2026-12-08): criterion's
# copy/copy_to_device/4KiB (benches/cpu.rs, with its 4 KiB size in both builds) of two revisions,
# built in worktrees of their own, run in turn, three rounds, on the development machine.
# Invoked as: bash bench/cpu-lone-copy/run.sh OLD_REV NEW_REV > bench/cpu-lone-copy/rounds-2026-12-08.txt
set -e
REPO=$(git rev-parse --show-toplevel)
for rev in "$@"; do
  wt=/tmp/lc-$rev
  git -C $REPO worktree add --detach $wt $rev -q
  cp $REPO/collectives/benches/cpu.rs $wt/collectives/benches/cpu.rs
  (cd $wt && CARGO_TARGET_DIR=$REPO/target/lc-$rev cargo bench -q -p collectives --bench cpu --no-run 2>/dev/null)
  cp $(ls $REPO/target/lc-$rev/release/deps/cpu-* | grep -v '\.d$' | head -1) /tmp/lc-bench-$rev
  git -C $REPO worktree remove --force $wt
done
for r in 1 2 3; do
  for rev in "$@"; do
    echo "round $r $rev: $(/tmp/lc-bench-$rev --bench 'copy/copy_to_device/4KiB' --noplot 2>&1 | grep -E '^ +time:' | head -1)"
  done
done
