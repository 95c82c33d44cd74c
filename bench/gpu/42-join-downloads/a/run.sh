#!/bin/bash
# Run 42a (b810f89, the binaries of run 41a): where the small all_to_all of a CUDA device and host
# devices spends its time (twice the all_reduce at 4 KiB): step logs of `cuda:0,cpu:0` and of
# `cuda:0,cpu:0,cpu:1,cpu:2` at 4 KiB, then the small collectives of both groups, two rounds.
# Staged by: run 41a's staging (bench/gpu/41-vulkan-views/a/run.sh), this run.sh copied to .gpu/.
# Invoked as: timeout -k 5 300 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
COLLECTIVES_LOG=debug p steps2 perf --op all_to_all --devices cuda:0,cpu:0 --sizes 4K --iters 10 --warmup 3
grep -A12 "realize steps" $L/steps2.log | tail -13
COLLECTIVES_LOG=debug p steps4 perf --op all_to_all --devices cuda:0,cpu:0,cpu:1,cpu:2 --sizes 4K --iters 10 --warmup 3
grep -A24 "realize steps" $L/steps4.log | tail -25
for r in 1 2; do
  for d in cuda:0,cpu:0 cuda:0,cpu:0,cpu:1,cpu:2; do
    p x_${r}_${d//[:,]/_} perf --op all_reduce,all_to_all,all_gather,reduce_scatter,scatter,gather,broadcast --devices $d --sizes 4K,64K --iters 300 --warmup 20
  done
done
date
