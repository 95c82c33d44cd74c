#!/bin/bash
# Run 39c: run b measured the star reduce_scatter of cuda:0,cpu:0 at 256 and 512 KiB slower with
# perf (this tree) than perf_old (ffc9215) in both rounds (59-118 us against 46-80), though its
# graph and schedule are the same (a fold on cuda:0, views, a download; no concat). Here: that
# row alone in each process and after the all_gather (as in run b, where the all_gather ran first
# in the same process), three rounds with the order of the binaries rotated; step logs of both
# binaries at 512 KiB after the all_gather.
# Staged: run b's .gpu/ as it was (bins.tar.xz with perf, perf_a, perf_old).
# Invoked as: timeout -k 5 200 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
D=cuda:0,cpu:0
for r in 1 2 3; do
  case $r in 1) B="perf_old perf";; 2) B="perf perf_old";; 3) B="perf_old perf";; esac
  for b in $B; do
    p rs_${b}_$r $b --op reduce_scatter --devices $D --sizes 4K,64K,256K,512K --iters 100 --warmup 10
    p agrs_${b}_$r $b --op all_gather,reduce_scatter --devices $D --sizes 4K,64K,256K,512K --iters 100 --warmup 10
  done
done
for b in perf_old perf; do
  COLLECTIVES_LOG=debug p steps_${b} $b --op all_gather,reduce_scatter --devices $D --sizes 512K --iters 10 --warmup 3
done
timeout 40 python3 $G/anchors.py --sizes 1M --iters 10 > $L/anchors.log 2>&1; tail -1 $L/anchors.log
date
