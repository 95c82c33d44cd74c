#!/bin/bash
# Run 59c: run a's comparison again on run b's lease (warm, right after it): 675a193 (perf)
# against 27dee07 (perf_old), issue 14's 4 KiB CUDA rows, four interleaved rounds; anchors.
# Staged by: run a's .gpu, with this file as .gpu/run_c.sh
# Invoked as: timeout -k 5 120 bash .gpu/run_c.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
I="--sizes 4K --iters 1000 --warmup 100"
for r in 1 2 3 4; do
  for b in perf_old perf; do
    p lr_${b}_$r $b --op local_reduce --devices cuda:0 $I
    p ch_${b}_$r $b --op all_reduce --devices cuda:0,cpu:0 $I
    COLLECTIVES_CUDA_DEVICES=0,0 p v2_${b}_$r $b --op all_reduce --devices cuda:0,cuda:1 $I
  done
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
