#!/bin/bash
# Run 62b: run a's rows again, three more interleaved rounds, on the same warm lease right after.
# Staged by: run a's .gpu, with this file as .gpu/run_b.sh
# Invoked as: timeout -k 5 60 bash .gpu/run_b.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
I="--sizes 4K --iters 1000 --warmup 100"
for r in 4 5 6; do
  for b in perf_old perf; do
    p lr_${b}_$r $b --op local_reduce --devices cuda:0 $I
    COLLECTIVES_CUDA_DEVICES=0,0 p v2_${b}_$r $b --op all_reduce --devices cuda:0,cuda:1 $I
  done
done
date
