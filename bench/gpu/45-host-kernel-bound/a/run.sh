#!/bin/bash
# Run 45a (one H100, 2026-12-06): the host kernels' bound raised to 4 MiB moved (`VULKAN_HOST_KERNEL_BYTES`, from run
# 44's b, d and e), its unit tests on their own bound. The Vulkan tests both ways (`vulkan_ops`
# and `joins` with the default bound and with every kernel on the device), `lib`,
# `vulkan_collectives`, the fault sweep; then perf, the old bound (`=524288`) against the
# default, two rounds: a Vulkan leader's folds past the old bound, and run 44d's rows.
# Staged by: bash bench/gpu/stage.sh bench/gpu/45-host-kernel-bound/a - lib vulkan_ops joins vulkan_collectives faults
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t lib lib 120 --test-threads 2
for i in 1 2 3; do t onhost$i lib 60 on_host; done
t vkcoll vulkan_collectives 90 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 90 --nocapture
grep -h -E "^total:" $L/t_faults.log
t joins joins 60 --test-threads 2
COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=0 t joins0 joins 60 --test-threads 2
COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=0 t ops0 vulkan_ops 60 --test-threads 4 --skip big --skip copy::
grep -h -E "panicked|FAILED|minimal failing" $L/t_*.log | head -20
unset REQUIRE_CUDA REQUIRE_VULKAN
D8=vulkan:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7
for r in 1 2; do
  order="old new"; [ $r = 2 ] && order="new old"
  for m in $order; do
    [ $m = old ] && export COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=524288 || unset COLLECTIVES_VULKAN_HOST_KERNEL_BYTES
    p k_${m}_${r}_8 perf --op local_reduce --devices $D8 --sizes 64K,128K,192K --iters 200 --warmup 20
    p k_${m}_${r}_v4 perf --op all_reduce,reduce_scatter --devices vulkan:0,cpu:0,cpu:1,cpu:2 --sizes 128K,192K --iters 200 --warmup 20
  done
done
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1; unset COLLECTIVES_VULKAN_HOST_KERNEL_BYTES
t ops vulkan_ops 150 --test-threads 4 --skip big
date
