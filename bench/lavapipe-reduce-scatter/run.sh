#!/usr/bin/env bash
# The reduce_scatter of mixed Vulkan (lavapipe) and host groups, star against one-shot, two
# interleaved rounds, on the 2-core development machine. From the repository root:
#   cargo build -q --release -p collectives-examples --example perf && bash bench/lavapipe-reduce-scatter/run.sh
set -euo pipefail
for r in 1 2; do
  for d in vulkan:0,cpu:0 cpu:0,vulkan:0 vulkan:0,cpu:0,cpu:1,cpu:2; do
    for a in star oneshot; do
      ./target/release/examples/perf --op reduce_scatter --devices "$d" --algo "$a" \
        --sizes 64K,1M,16M,64M -n 10 -w 3 | grep -E '^ +reduce_scatter' | sed "s/^/r$r $d /"
    done
  done
done
