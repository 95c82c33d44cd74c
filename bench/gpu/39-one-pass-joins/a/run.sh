#!/bin/bash
# Run 39: small concats and slices on a CUDA device stream in one pass (exec/stream.rs): the
# kernel reads its host inputs in place from pinned memory and writes its host copies across the
# bus on one stream, where a join uploaded each host part, placed it, and a copy downloaded the
# result (run 38b: the 4 KiB all_gather of cuda:0,cpu:0 28.3 us against the all_reduce's 13.0).
# perf_old is main before it (ffc9215), perf this tree; two interleaved rounds; anchors.py in the
# same command; a step log of the new build at 4 KiB; issue 14's 4 KiB rows; then the tests that
# run the changed paths on the GPU: the library's unit tests (the one-pass concat and slice at odd
# sizes and dtypes, the direct all_gather step), collective_props (now with cuda:0 in about half
# of its random groups), device_groups, joins, cuda_ops, plans, the fault sweep.
# Staged by: bash bench/gpu/stage.sh bench/gpu/39-one-pass-joins/a ffc9215 lib collective_props device_groups joins cuda_ops plans faults
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
OPS=all_gather,reduce_scatter,all_to_all,gather,all_reduce,reduce
for r in 1 2; do for b in perf_old perf; do
  for d in cuda:0,cpu:0 cuda:0,cpu:0,cpu:1,cpu:2; do
    p small_${d//[:,]/_}_${b}_$r $b --op $OPS --devices $d --sizes 4K,64K,256K,512K --iters 100 --warmup 10
  done
  p vk_${b}_$r $b --op all_gather,all_to_all,reduce_scatter --devices cuda:0,vulkan:0,cpu:0 --sizes 4K,64K --iters 50 --warmup 5
done; done
COLLECTIVES_LOG=debug p steps4k_host perf --op all_gather,reduce_scatter,all_to_all,gather --devices cuda:0,cpu:0 --sizes 4K --iters 20 --warmup 3
C8=cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7
for r in 1 2; do
  p lr_$r perf --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
  p ch_$r perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
  COLLECTIVES_CUDA_DEVICES=0,0 p cc_$r perf --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 2000 --warmup 100
  p c8_$r perf --op all_reduce --devices $C8 --sizes 4K --iters 2000 --warmup 100
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t lib lib 120 --test-threads 2
t props collective_props 120 --test-threads 2 --nocapture
t groups device_groups 150 --test-threads 2
t joins joins 40 --test-threads 2
t cuda_ops cuda_ops 60 --test-threads 2
t plans plans 40 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 90
grep -h -E "^total:" $L/t_faults.log
grep -h -E "panicked|FAILED|skipped" $L/t_*.log | head -20
date
