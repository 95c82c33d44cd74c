#!/bin/bash
# Run 43b (staged for the next session with a machine; none was lent on 2026-12-05): small
# Vulkan kernels of tensors in host memory run by the host (`backend/vulkan/on_host.rs`). One perf
# binary, every kernel on the device (`COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=0`, the build before's
# path) against the default, four rounds, the order alternating: a Vulkan leader's small calls;
# the bound's neighbourhood (`local_reduce` of two shards from 16 KiB to 512 KiB and of eight
# from 4 to 128 KiB, the host's column with the bound raised to 2 MiB so that it takes every
# size); `cuda:0,vulkan:0`, whose fold is CUDA's (should not move). Then the host kernels'
# thread-pool bound on its 16 cores (2 MiB moved since 1988e56; `perf_old` is the build before,
# which went to the pool from 64 Ki elements of output), four rounds. Anchors.
# Staged by: bash bench/gpu/stage.sh bench/gpu/43-host-kernels/b 238e6eb joins
# Invoked as: timeout -k 5 500 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in 1 2 3 4; do
  order="dev host"; [ $((r % 2)) = 0 ] && order="host dev"
  for m in $order; do
    bound=$([ $m = dev ] && echo 0 || echo 524288)
    export COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=$bound
    p x_${m}_${r}_lr perf --op local_reduce --devices vulkan:0,cpu:1 --sizes 4K,64K --iters 300 --warmup 20
    p x_${m}_${r}_v1 perf --op all_reduce,reduce,reduce_scatter --devices vulkan:0,cpu:0 --sizes 4K,64K --iters 300 --warmup 20
    p x_${m}_${r}_v3 perf --op all_reduce,reduce_scatter --devices vulkan:0,cpu:0,cpu:1,cpu:2 --sizes 4K --iters 300 --warmup 20
    p x_${m}_${r}_cv perf --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K,64K --iters 300 --warmup 20
    [ $m = host ] && export COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=2097152
    p x_${m}_${r}_bound perf --op local_reduce --devices vulkan:0,cpu:1 --sizes 16K..512K --iters 200 --warmup 20
    p x_${m}_${r}_bound8 perf --op local_reduce --devices vulkan:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 --sizes 4K..128K --iters 200 --warmup 20
  done
done
unset COLLECTIVES_VULKAN_HOST_KERNEL_BYTES
for r in 1 2 3 4; do
  order="perf perf_old"; [ $((r % 2)) = 0 ] && order="perf_old perf"
  for b in $order; do
    p c2_${b}_${r} $b --op all_reduce,local_reduce --devices cpu:0,cpu:1 --sizes 128K..4M --iters 100 --warmup 10
    p c8_${b}_${r} $b --op all_reduce,reduce_scatter --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 --sizes 64K..2M --iters 100 --warmup 10
  done
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
