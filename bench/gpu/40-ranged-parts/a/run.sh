#!/bin/bash
# Run 40a: a small CUDA fold writes its host members' parts itself (the stream pass fans out the
# copies of contiguous slices of a one-pass kernel's result as ranges, `exec/stream.rs`;
# `Delivery`, `backend/cuda/mapped.rs`). The GPU tests of the one-pass path and of the
# collectives over CUDA and host devices, the fault sweep; then the reduce_scatter of one CUDA
# device and host devices, this build (`perf`) against main before the change (51e1def,
# `perf_old`), two interleaved rounds, a step log, issue 14's 4 KiB rows, the anchors.
# Staged by: bash bench/gpu/stage.sh bench/gpu/40-ranged-parts/a 51e1def lib collective_props joins plans cuda_ops typed faults
# Invoked as: timeout -k 5 540 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t lib lib 150 --test-threads 2
t props collective_props 120 --test-threads 2 --nocapture
for b in joins plans cuda_ops typed; do t $b $b 60 --test-threads 2; done
COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 90 --nocapture
grep -h -E "^total:" $L/t_faults.log
grep -h -E "panicked|FAILED|skipped|minimal failing" $L/t_*.log | head -20
unset REQUIRE_CUDA REQUIRE_VULKAN
for r in 1 2; do
  for b in perf perf_old; do
    for d in cuda:0,cpu:0 cuda:0,cpu:0,cpu:1,cpu:2; do
      p rs_${b}_${r}_${d//[:,]/_} $b --op reduce_scatter --devices $d --sizes 4K,64K,256K,512K --iters 100 --warmup 10
    done
    p rsv_${b}_${r} $b --op reduce_scatter --devices cuda:0,vulkan:0,cpu:0 --sizes 4K,64K --iters 100 --warmup 10
  done
done
COLLECTIVES_LOG=debug p steps perf --op reduce_scatter --devices cuda:0,cpu:0 --sizes 4K --iters 10 --warmup 3
grep -A5 "realize steps" $L/steps.log | tail -6
for b in perf perf_old; do
  p ar_$b $b --op all_reduce,all_gather,local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 1000 --warmup 100
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
