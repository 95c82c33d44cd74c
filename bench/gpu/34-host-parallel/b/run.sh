#!/bin/bash
# Run b: 726ac27 (the host all_to_all side by side from 2 MiB of outputs) on the H200 host, `perf`
# against `perf_old` (17945ec, run a's `perf`) in two interleaved rounds around the threshold; every
# collective of the mixed groups cuda:0,cpu:0 and cuda:0,vulkan:0 from 4 KiB to 256 MiB (looking
# for a size where a mixed group falls off the pinned ceiling), anchors.py in the same command; then
# every test binary of 726ac27 (stripped dev builds, --features slow,failpoints) on the physical
# mapping with CUDA and Vulkan required, cuda_native on three and eight virtual CUDA devices, the
# fault sweep on two.
# Invoked as: timeout -k 5 590 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
C8=cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7; C4=cpu:0,cpu:1,cpu:2,cpu:3
for r in 1 2; do for b in perf_old perf; do
p a8_${b}_$r $b --op all_to_all --devices $C8 --sizes 32K,64K,128K,256K,512K,1M --iters 40 --warmup 4
p a4_${b}_$r $b --op all_to_all --devices $C4 --sizes 64K,128K,256K,512K,1M,2M --iters 40 --warmup 4
done; done
ALL=all_reduce,all_gather,reduce_scatter,broadcast,reduce,gather,scatter,all_to_all
p mix_c perf --op $ALL --devices cuda:0,cpu:0 --sizes 4K,1M,16M,256M --iters 10 --warmup 2
p mix_v perf --op $ALL --devices cuda:0,vulkan:0 --sizes 4K,1M,16M,256M --iters 10 --warmup 2
timeout 60 python3 $G/anchors.py --sizes 1M,16M,256M --iters 10 > $L/anchors.log 2>&1; tail -3 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t lib lib 100 --test-threads 4
for b in plans cuda_ops cuda_copies joins cuda_faults typed vulkan_ops vulkan_collectives errors limits; do t $b $b 40 --test-threads 2; done
t groups device_groups 100 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0 t native_3 cuda_native 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native_8 cuda_native 90 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 70 --show-output
grep -h "^total:" $L/t_faults2.log
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
