#!/bin/bash
# Run 40e: run d's binaries again (88bc92d `perf`, ff87ad3 `perf_b`), the all_to_all of one CUDA
# device and three host devices and with a Vulkan member, 500 iterations a row, four rounds, the
# binaries' order alternating (run d's rows read 60 or 80 µs at 4 KiB from one round to the next
# for either build), then the anchors.
# Staged by: run d's .gpu with this run.sh copied over .gpu/run.sh.
# Invoked as: timeout -k 5 300 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in 1 2 3 4; do
  order="perf perf_b"; [ $((r % 2)) = 0 ] && order="perf_b perf"
  for b in $order; do
    for d in cuda:0,cpu:0,cpu:1,cpu:2 cuda:0,vulkan:0,cpu:0,cpu:1; do
      p a_${b}_${r}_${d//[:,]/_} $b --op all_to_all --devices $d --sizes 4K,64K,256K,1M --iters 500 --warmup 50
    done
  done
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
