#!/bin/bash
# Run 52a: the probe of a small host input carried in the launch's parameters against one read
# across the bus (`backend::cuda::probe::inline::inline_host_input_probe`); the change that
# carries small pageable host inputs of a one-pass reduce so (perf, the tree staged) against
# 1cdc032 (perf_old: main c0e70e6 and the probe), two interleaved rounds: issue 14's 4 KiB rows
# and the mixed all_reduce at 256 B, 4 KiB and 16 KiB (none carried at 16 KiB), of one and of three
# host devices; anchors; the GPU-facing tests the change touches (`lib`, `device_groups`, the
# fault sweep) and the native collectives on 2 virtual devices (cut down after leases failed to
# start six times).
# Staged by: bash bench/gpu/stage.sh bench/gpu/52-inline/a 1cdc032 lib cuda_native faults device_groups
# Invoked as: timeout -k 5 330 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t probe lib 60 --ignored --exact backend::cuda::probe::inline::inline_host_input_probe --nocapture
grep -h "probe:" $L/t_probe.log
I="--sizes 4K --iters 500 --warmup 50"
D2=cuda:0,cuda:1 C8=cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7
C3=cuda:0,cpu:0,cpu:1,cpu:2 M="--sizes 256,4K,16K --iters 500 --warmup 50"
for r in 1 2; do
  for b in perf_old perf; do
    p i_lr_${b}_$r $b --op local_reduce --devices cuda:0 $I
    p m_ch_${b}_$r $b --op all_reduce --devices cuda:0,cpu:0 $M
    p m_c3_${b}_$r $b --op all_reduce --devices $C3 $M
    COLLECTIVES_CUDA_DEVICES=0,0 p i_v2_${b}_$r $b --op all_reduce --devices $D2 $I
  done
  p i_c8_perf_$r perf --op all_reduce --devices $C8 $I
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t carried lib 60 carries --nocapture
grep -h "carried in" $L/t_carried.log
COLLECTIVES_CUDA_DEVICES=0,0 t lib2 lib 100
COLLECTIVES_CUDA_DEVICES=0,0 t native2 cuda_native 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 60 --show-output
grep -h "^total:" $L/t_faults2.log
t groups device_groups 120
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
