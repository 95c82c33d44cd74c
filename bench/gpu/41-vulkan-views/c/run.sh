#!/bin/bash
# Run 41c (b810f89, run a's binaries): the small sizes alone (tensors in host memory, where an
# unaligned Vulkan slice was a copy by the host; run b's one round at 4 KiB read the control group
# 12 µs apart between two builds that run it alike), 300 iterations a row, four rounds, the
# binaries' order alternating; the anchors.
# Staged by: run a's staging (bench/gpu/41-vulkan-views/a/run.sh), this run.sh copied to .gpu/.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in 1 2 3 4; do
  order="perf perf_old"; [ $((r % 2)) = 0 ] && order="perf_old perf"
  for b in $order; do
    for d in vulkan:0,cpu:0,cpu:1 vulkan:0,cpu:0,cpu:1,cpu:2; do
      p x_${b}_${r}_${d//[:,]/_} $b --op all_to_all,scatter,reduce_scatter --devices $d --sizes 4K,64K --iters 300 --warmup 20
    done
  done
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
