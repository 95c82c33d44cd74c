#!/bin/bash
# Run 43c: a and b in one command, cut to fit one call, for a session whose machine came late.
# The GPU tests of the host's small Vulkan kernels (`vulkan_ops` and `joins` with the default
# bound and again with every kernel on the device, `lib`, the fault sweep); then perf, one
# binary, every kernel on the device (`COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=0`) against the
# default, two rounds, the order alternating; the host pool's bound (1988e56) against 238e6eb
# (`perf_old`) on the host's cores, two rounds; anchors.
# Staged by: bash bench/gpu/stage.sh bench/gpu/43-host-kernels/c 238e6eb lib vulkan_ops joins faults
# Invoked as: timeout -k 5 590 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nproc
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t ops vulkan_ops 170 --test-threads 4 --skip big
COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=0 t ops0 vulkan_ops 100 --test-threads 4 --skip big --skip copy::
t joins joins 60 --test-threads 2
COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=0 t joins0 joins 60 --test-threads 2
t lib lib 100 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 90 --nocapture
grep -h -E "^total:" $L/t_faults.log
grep -h -E "panicked|FAILED|minimal failing" $L/t_*.log | head -20
unset REQUIRE_CUDA REQUIRE_VULKAN
for r in 1 2; do
  order="dev host"; [ $((r % 2)) = 0 ] && order="host dev"
  for m in $order; do
    export COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=$([ $m = dev ] && echo 0 || echo 524288)
    p x_${m}_${r}_lr perf --op local_reduce --devices vulkan:0,cpu:1 --sizes 4K,64K,128K --iters 300 --warmup 20
    p x_${m}_${r}_v1 perf --op all_reduce,reduce_scatter --devices vulkan:0,cpu:0 --sizes 4K,64K --iters 300 --warmup 20
    p x_${m}_${r}_v3 perf --op all_reduce --devices vulkan:0,cpu:0,cpu:1,cpu:2 --sizes 4K,64K --iters 300 --warmup 20
    p x_${m}_${r}_cv perf --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K --iters 300 --warmup 20
  done
done
unset COLLECTIVES_VULKAN_HOST_KERNEL_BYTES
for r in 1 2; do
  order="perf perf_old"; [ $((r % 2)) = 0 ] && order="perf_old perf"
  for b in $order; do
    p c2_${b}_${r} $b --op all_reduce --devices cpu:0,cpu:1 --sizes 256K,512K,1M --iters 100 --warmup 10
    p c8_${b}_${r} $b --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 --sizes 128K,256K --iters 100 --warmup 10
  done
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
