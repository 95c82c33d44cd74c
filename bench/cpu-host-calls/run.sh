#!/bin/bash
# The host groups' small-call costs before and after this session's changes, on the development
# machine (2 cores, shared). Builds the release perf example of each revision with the perf tool's
# sources of the last one (so every build knows --op gather,scatter), then runs them interleaved,
# ROUNDS rounds.
# Invoked as: bash bench/cpu-host-calls/run.sh baeb2b2 fc30794 1c0960d > bench/cpu-host-calls/rounds-2026-12-04.txt
# and (with reduce and gather added to the cpu:0,cpu:1 row) bash bench/cpu-host-calls/run.sh 4e2923c ca6e943 > bench/cpu-host-calls/rounds-2026-12-05.txt
set -e
ROUNDS=${ROUNDS:-3}
REPO=$(git rev-parse --show-toplevel)
LAST=${@: -1}
for rev in "$@"; do
  wt=/tmp/hc-$rev
  [ -x /tmp/perf-$rev ] && continue
  git -C $REPO worktree add --detach $wt $rev -q
  rm -rf $wt/examples/perf && git -C $REPO archive $LAST examples/perf | tar x -C $wt
  (cd $wt && CARGO_TARGET_DIR=$REPO/target/hc cargo build -q --release -p collectives-examples --example perf)
  cp $REPO/target/hc/release/examples/perf /tmp/perf-$rev
  git -C $REPO worktree remove --force $wt
done
D8=cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7
echo "# columns: round, revision, devices, op, size (B), algo, median us, #wrong"
for r in $(seq $ROUNDS); do
  for rev in "$@"; do
    b=/tmp/perf-$rev
    row() { awk -v r=$r -v v=$rev -v g=$1 '/^ +[a-z_]+ +[0-9]+ /{print r, v, g, $1, $2, $6, $7, $10}'; }
    $b --op all_reduce,all_gather,reduce_scatter,all_to_all,reduce,gather --devices $D8 --sizes 4K --iters 20000 --warmup 500 | row cpu8
    $b --op broadcast,scatter --devices $D8 --sizes 4K,64K,1M,16M --iters 200 --warmup 20 | row cpu8
    $b --op all_reduce,broadcast,scatter,reduce,gather --devices cpu:0,cpu:1 --sizes 4K --iters 20000 --warmup 500 | row cpu2
    $b --op broadcast,scatter --devices cpu:0,cpu:1 --sizes 16M --iters 200 --warmup 20 | row cpu2
  done
done
