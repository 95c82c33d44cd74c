#!/bin/bash
# Run 46b: the rule run a's figures gave (`host_stages_cuda`, 8ea4dfc): CUDA members staged in
# every small collective of three or more members but the all_reduce folded on a CUDA hub
# beside host devices only; of a pair, the all_to_all below `HOST_STAGED_CUDA_PAIR_BELOW_BYTES`
# (16 KiB in this build). Tests of this tree (`device_groups`, its new tests again on two virtual
# CUDA devices for the `cuda:0,cuda:1,cpu:0` group, `plans`, `typed`, `vulkan_collectives`,
# `collective_props`, the fault sweep, `lib`); then perf, three rounds, the order alternating:
# the pair's all_to_all from 4 to 48 KiB with that bound raised to 128 KiB (`perf_x`, staged at
# every size) against 2bf872b (`perf_old`, the graph); this build (`perf`) against `perf_old`,
# every collective of the run-a groups and of `cuda:0,cuda:1,cpu:0` (virtual devices) at 4 and
# 64 KiB; anchors.
# Staged by: bash bench/gpu/stage.sh bench/gpu/46-cuda-staged/b 2bf872b device_groups plans typed vulkan_collectives collective_props faults lib (at 8ea4dfc), then .gpu/bins.tar.xz repacked with perf_x = the release perf tool of 8ea4dfc with HOST_STAGED_CUDA_PAIR_BELOW_BYTES = 128 << 10
# Invoked as: timeout -k 5 420 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
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
t vkcoll vulkan_collectives 60 --test-threads 2
t props collective_props 100 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 90 --nocapture
grep -h -E "^total:" $L/t_faults.log
grep -h -E "panicked|FAILED|minimal failing" $L/t_*.log | head -20
unset REQUIRE_CUDA REQUIRE_VULKAN
for r in 1 2 3; do
  order="perf_x perf_old"; [ $((r % 2)) = 0 ] && order="perf_old perf_x"
  for b in $order; do
    p pc_${b}_${r} $b --op all_to_all --devices cuda:0,cpu:0 --sizes 4K,8K,12K,16K,24K,32K,48K --iters 300 --warmup 30
    p ph_${b}_${r} $b --op all_to_all --devices cpu:0,cuda:0 --sizes 4K,8K,12K,16K,24K,32K,48K --iters 300 --warmup 30
  done
done
OPS=all_reduce,all_gather,reduce_scatter,broadcast,scatter,all_to_all
for r in 1 2; do
  order="perf perf_old"; [ $((r % 2)) = 0 ] && order="perf_old perf"
  for b in $order; do
    for D in cuda:0,cpu:0 cpu:0,cuda:0 cuda:0,cpu:0,cpu:1,cpu:2 cpu:0,cpu:1,cpu:2,cuda:0 cuda:0,vulkan:0,cpu:0; do
      p g_${D//[:,]/}_${b}_${r} $b --op $OPS --devices $D --sizes 4K,64K --iters 200 --warmup 20
    done
    COLLECTIVES_CUDA_DEVICES=0,0 p g_cc_${b}_${r} $b --op $OPS --devices cuda:0,cuda:1,cpu:0 --sizes 4K,64K --iters 200 --warmup 20
  done
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t lib lib 120 --test-threads 2
date
