#!/bin/bash
# Run 35 (run on 2026-12-05 on one H100, runs a and b; figures in README.md): the one-shot reduce_scatter of
# groups that are not one call, against the star, on the H200 (both APIs on the one GPU, and its
# 16-core host), two interleaved rounds from 4 KiB to 256 MiB, anchors.py in the same command;
# the all_gather and all_to_all of cuda:0,vulkan:0 and vulkan:0,cuda:0, perf against perf_old
# (the all_gather of a Vulkan-led mixed group now joins on the CUDA member; run 34c's guess
# that the Vulkan concat waiting on a CUDA copy costs ~320 us), the probe of that guess and the
# step logs of both orders; then the tests that cover the
# change on the GPU: device_groups (every collective of the mixed groups with OneShot, the
# streamed one-shot reduce_scatter of cuda:0,cpu:0), cuda_native on two and three virtual CUDA
# devices (the one-shot reduce_scatter along dim 1 through the graph), plans, the lib's
# backend::cuda::register and backend::vulkan::register tests (host views uploaded from their
# owner's locking or import), the fault sweep (imports of host shards: no leaks).
# Staged by: bash bench/gpu/stage.sh bench/gpu/35-one-shot-reduce-scatter 7f4735c (dev test
# binaries --features slow,failpoints, release perf, perf_old the release perf of 7f4735c).
# Two calls (each within 590 s), PART perf then tests, the folders a (perf) and b (tests):
# Invoked as: timeout -k 5 590 bash .gpu/run.sh PART 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
PART=${1:?perf or tests}
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ $PART = perf ]; then
S=4K,64K,1M,16M,256M
for r in 1 2; do for d in cuda:0,cpu:0 cpu:0,cuda:0 cuda:0,vulkan:0 vulkan:0,cpu:0 cuda:0,vulkan:0,cpu:0; do
  for a in star oneshot; do p rs_${d//[:,]/_}_${a}_$r perf --op reduce_scatter --devices $d --algo $a --sizes $S --iters 10 --warmup 3; done
done; done
# perf_old: 7f4735c (the all_gather of a Vulkan-led mixed group joined on the Vulkan leader).
for r in 1 2; do for b in perf_old perf; do for d in cuda:0,vulkan:0 vulkan:0,cuda:0; do
  p ag_${d//[:,]/_}_${b}_$r $b --op all_gather,all_to_all --devices $d --sizes 4K,64K,1M,16M --iters 20 --warmup 3
done; done; done
# ab7a17d: a slice of a locked host shard uploads by DMA at its offset (was staged on the
# issuing thread, serialising the all_to_all's two directions, run 34c); locked after 4 calls.
for r in 1 2; do for b in perf_old perf; do
  p a2a_cuda_0_cpu_0_${b}_$r $b --op all_to_all,reduce_scatter --devices cuda:0,cpu:0 --sizes 16M,256M --iters 10 --warmup 5
done; done
# A host tensor uploaded again to the Vulkan device is imported and copied from in place (was a
# staging fill on the calling thread, then the device's copy).
for r in 1 2; do for b in perf_old perf; do
  p up_cpu_0_vulkan_0_${b}_$r $b --op broadcast,all_reduce --devices cpu:0,vulkan:0 --sizes 16M,256M --iters 10 --warmup 3
done; done
# The guess itself: a Vulkan add after a move from CUDA, waiting on the GPU vs on the host.
t probe_wait lib 120 --ignored --nocapture --exact backend::staged::one_gpu::vulkan_kernel_waiting_on_cuda_probe
grep -E "^round" $L/t_probe_wait.log
for d in cuda:0,vulkan:0 vulkan:0,cuda:0; do
  COLLECTIVES_LOG=debug timeout 60 $G/perf --op all_to_all --devices $d --sizes 1M --iters 3 --warmup 3 > $L/a2a_debug_${d//[:,]/_}.log 2>&1
done
timeout 60 python3 $G/anchors.py --sizes 1M,16M,256M --iters 10 > $L/anchors.log 2>&1; tail -3 $L/anchors.log
fi
if [ $PART = tests ]; then
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t groups device_groups 150 --test-threads 2
t plans plans 40 --test-threads 2
t register lib 60 backend::cuda::register
t vk_register lib 60 backend::vulkan::register
# The sweep with a Vulkan member's 1.2 MB host shards uploaded again: imported (device memory is
# not mapped here, as it is on lavapipe), the imports counted as a cache of the host pool.
COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 150
COLLECTIVES_CUDA_DEVICES=0,0 t native_2 cuda_native 90 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0 t native_3 cuda_native 90 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
fi
date
