#!/bin/bash
# Run 44a (one H100, 2026-12-06): the small star collectives and all_to_all of host and Vulkan devices as one host call,
# the Vulkan member staged through a host member (`backend/cpu/staged.rs`, below
# `HOST_STAGED_BELOW_BYTES` = 128 KiB a shard). The GPU tests this touches (`vulkan_collectives`
# with the new test on both sides of the bound, `plans`, `typed`, `collective_props`, `joins`,
# `lib` (also run 43c's two test fixes, 0a15b46), the fault sweep); then perf, this build
# (`perf`) against main before it (`perf_old` = 6642a46), two rounds, the order alternating:
# every collective of `cpu:0,cpu:1,cpu:2,vulkan:0`, `vulkan:0,cpu:0,cpu:1,cpu:2` and
# `vulkan:0,cpu:0` at 4, 64 and 96 KiB (staged) and 128 KiB (the graph in both); anchors.
# Staged by: bash bench/gpu/stage.sh bench/gpu/44-staged-calls/a - lib vulkan_collectives plans typed collective_props joins faults (at 439dca8), then .gpu/bins.tar.xz repacked with perf_old = 6642a46's release perf tool (what the stage script's OLD_REV 6642a46 builds)
# Invoked as: timeout -k 5 470 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nproc
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t vkcoll vulkan_collectives 90 --test-threads 2
t plans plans 60 --test-threads 2
t typed typed 60 --test-threads 2
t joins joins 60 --test-threads 2
t lib lib 120 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 90 --nocapture
grep -h -E "^total:" $L/t_faults.log
grep -h -E "small" $L/t_faults.log | grep -E "Gather|Broadcast|Scatter|AllToAll"
t props collective_props 100 --test-threads 2
grep -h -E "panicked|FAILED|minimal failing" $L/t_*.log | head -20
unset REQUIRE_CUDA REQUIRE_VULKAN
OPS=all_reduce,all_gather,reduce_scatter,broadcast,scatter,all_to_all
for r in 1 2; do
  order="perf perf_old"; [ $((r % 2)) = 0 ] && order="perf_old perf"
  for b in $order; do
    p m4_${b}_${r} $b --op $OPS --devices cpu:0,cpu:1,cpu:2,vulkan:0 --sizes 4K,64K,96K,128K --iters 200 --warmup 20
    p v4_${b}_${r} $b --op $OPS --devices vulkan:0,cpu:0,cpu:1,cpu:2 --sizes 4K,64K,96K,128K --iters 200 --warmup 20
    p v2_${b}_${r} $b --op $OPS --devices vulkan:0,cpu:0 --sizes 4K,64K,96K,128K --iters 200 --warmup 20
  done
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
