#!/bin/bash
# Run 40b (ff87ad3): the fanned kernel of the direct path also takes a small CUDA kernel's parts and
# their copies to host devices (d495a24, `exec/direct/fanned.rs`): the star reduce_scatter of
# one CUDA device and host devices is one step issued directly (ff87ad3: one helper factored out in
# `backend/cuda/mapped.rs`). Every GPU test binary but device_groups; then the reduce_scatter
# rows of run a with this build (`perf`), run a's (bd71b4b, `perf_a`) and main before both
# (51e1def, `perf_old`), two interleaved rounds; the small all_reduce, all_gather and
# local_reduce (whose direct path moved) against 51e1def; a step log; the anchors.
# Staged by: bash bench/gpu/stage.sh bench/gpu/40-ranged-parts/b 51e1def lib collective_props joins plans cuda_ops typed first_hour cuda_copies faults
#   then perf of bd71b4b added to bins.tar.xz as perf_a.
# Invoked as: timeout -k 5 540 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t lib lib 150 --test-threads 2
t props collective_props 120 --test-threads 2 --nocapture
for b in joins plans cuda_ops typed first_hour cuda_copies; do t $b $b 60 --test-threads 2; done
COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 90 --nocapture
grep -h -E "^total:" $L/t_faults.log
grep -h -E "panicked|FAILED|skipped|minimal failing" $L/t_*.log | head -20
grep -h -E "^test .*fanned::" $L/t_lib.log
unset REQUIRE_CUDA REQUIRE_VULKAN
for r in 1 2; do
  for b in perf perf_a perf_old; do
    for d in cuda:0,cpu:0 cuda:0,cpu:0,cpu:1,cpu:2; do
      p rs_${b}_${r}_${d//[:,]/_} $b --op reduce_scatter --devices $d --sizes 4K,64K,256K,512K --iters 100 --warmup 10
    done
  done
  for b in perf perf_old; do
    p ar_${b}_$r $b --op all_reduce,all_gather,local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 1000 --warmup 100
  done
done
COLLECTIVES_LOG=debug p steps perf --op reduce_scatter --devices cuda:0,cpu:0 --sizes 4K --iters 10 --warmup 3
grep -m3 -E "directly|realize" $L/steps.log
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
