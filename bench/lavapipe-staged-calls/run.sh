#!/usr/bin/env bash
# The small star collectives and all_to_all of host and Vulkan devices as one host call, the
# Vulkan member staged through a host member (`collectives/src/backend/cpu/staged.rs`), against
# main before it (6642a46, every one through the graph), on lavapipe: every collective with a
# host call, three groups, 4 to 128 KiB a shard (below `HOST_STAGED_BELOW_BYTES`, 128 KiB, the
# new build stages; at it both take the graph). Three rounds, the two builds interleaved and the
# order alternating. Run from the repository root on the development machine, idle, with
#   git worktree add --detach /tmp/wt-old 6642a46
#   (cd /tmp/wt-old && CARGO_TARGET_DIR=/work/target-old cargo build --release -p collectives-examples --example perf)
#   cargo build --release -p collectives-examples --example perf
# Invoked as: OLD=/work/target-old/release/examples/perf bash bench/lavapipe-staged-calls/run.sh > bench/lavapipe-staged-calls/rounds.txt 2>&1
set -u
new=target/release/examples/perf
old=${OLD:?the perf tool of 6642a46}
ops=all_reduce,all_gather,reduce_scatter,broadcast,scatter,all_to_all
rows() {
  for g in cpu:0,cpu:1,cpu:2,vulkan:0 vulkan:0,cpu:0,cpu:1,cpu:2 vulkan:0,cpu:0; do
    $1 --op $ops --devices $g --sizes 4K,64K,96K,128K -n 200 -w 20 | grep -E '^ +[a-z_]+ +[0-9]+ ' | sed "s/^/$g /"
  done
  $1 --op all_to_all,all_reduce --devices vulkan:0,cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6 --sizes 4K,64K -n 200 -w 20 \
    | grep -E '^ +[a-z_]+ +[0-9]+ ' | sed "s/^/vulkan:0,cpu:0..6 /"
}
run() { echo "== $1 round $2"; if [ "$1" = old ]; then rows "$old"; else rows "$new"; fi; }
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then run old $r; run new $r; else run new $r; run old $r; fi
done
