#!/bin/bash
# Run 46c: the rule as committed (03d6c6a): run b's, with two CUDA members staged only in the
# all_to_all and the pair's all_to_all bound at 24 KiB. Tests of this tree (`device_groups`, its
# two new tests again on two virtual CUDA devices, `plans`, `typed`, the fault sweep); then perf,
# this build (`perf`) against 2bf872b (`perf_old`), two rounds, the order alternating: the pairs'
# all_to_all at 4, 16, 20, 24 and 64 KiB, every collective of `cuda:0,cuda:1,cpu:0` (virtual
# devices) at 4 and 64 KiB; anchors.
# Staged by: bash bench/gpu/stage.sh bench/gpu/46-cuda-staged/c 2bf872b device_groups plans typed faults (at 03d6c6a)
# Invoked as: timeout -k 5 300 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nproc
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t groups device_groups 200 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t groups2 device_groups 60 small_ --nocapture
grep -h "checked on both sides" $L/t_groups2.log
t plans plans 60 --test-threads 2
t typed typed 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 90 --nocapture
grep -h -E "^total:" $L/t_faults.log
grep -h -E "panicked|FAILED|minimal failing" $L/t_*.log | head -20
unset REQUIRE_CUDA REQUIRE_VULKAN
OPS=all_reduce,all_gather,reduce_scatter,broadcast,scatter,all_to_all
for r in 1 2; do
  order="perf perf_old"; [ $((r % 2)) = 0 ] && order="perf_old perf"
  for b in $order; do
    p pc_${b}_${r} $b --op all_to_all --devices cuda:0,cpu:0 --sizes 4K,16K,20K,24K,64K --iters 300 --warmup 30
    p ph_${b}_${r} $b --op all_to_all --devices cpu:0,cuda:0 --sizes 4K,16K,20K,24K,64K --iters 300 --warmup 30
    COLLECTIVES_CUDA_DEVICES=0,0 p cc_${b}_${r} $b --op $OPS --devices cuda:0,cuda:1,cpu:0 --sizes 4K,64K --iters 200 --warmup 20
  done
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
