#!/bin/bash
# Run 47b: the rule run a's figures gave (c70c27a): a CUDA device and a Vulkan device alone
# stage every collective with a host call below `HOST_STAGED_CUDA_PAIR_BELOW_BYTES` (24 KiB) but
# the scatter from the CUDA device; with two CUDA devices, the all_to_all and the broadcast.
# Perf, two rounds, the order alternating: this build (`perf`) against 3874c8d (`perf_old`),
# every collective with a host call of `cuda:0,vulkan:0` and `vulkan:0,cuda:0` at 4, 16, 24 and
# 32 KiB, of `cuda:0,cuda:1,vulkan:0` (virtual) at 4 and 64 KiB; anchors. Then the tests of this
# tree: `device_groups`' small staged tests (one GPU, then two virtual CUDA devices), `plans`,
# `vulkan_collectives`, the fault sweep on two virtual CUDA devices.
# Staged by: bash bench/gpu/stage.sh bench/gpu/47-vulkan-pair/b 3874c8d device_groups vulkan_collectives plans faults (at c70c27a)
# Invoked as: timeout -k 5 300 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nproc
OPS=all_reduce,all_gather,reduce_scatter,broadcast,scatter,all_to_all
for r in 1 2; do
  order="perf perf_old"; [ $((r % 2)) = 0 ] && order="perf_old perf"
  for b in $order; do
    for D in cuda:0,vulkan:0 vulkan:0,cuda:0; do
      p g_${D//[:,]/}_${b}_${r} $b --op $OPS --devices $D --sizes 4K,16K,24K,32K --iters 200 --warmup 20
    done
    COLLECTIVES_CUDA_DEVICES=0,0 p g_ccv_${b}_${r} $b --op $OPS --devices cuda:0,cuda:1,vulkan:0 --sizes 4K,64K --iters 200 --warmup 20
  done
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t groups device_groups 120 small_ --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t groups2 device_groups 120 small_ --nocapture
grep -h "checked on both sides" $L/t_groups2.log
t plans plans 60 --test-threads 2
t vkcoll vulkan_collectives 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 120 --nocapture
grep -h -E "^total:" $L/t_faults.log
grep -h -E "panicked|FAILED|minimal failing" $L/t_*.log | head -20
unset REQUIRE_CUDA REQUIRE_VULKAN
date
