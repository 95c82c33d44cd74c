#!/bin/bash
# Run 39d: the GPU tests on the final tree of the session (e84c443: run b's library, a test
# helper and docs since), all of them where runs a and b ran some; then step logs of the small
# mixed rows still slow (the reduce_scatter and all_to_all of one CUDA device and host devices,
# the broadcast and scatter beside them) for the next change, and issue 14's 4 KiB rows.
# Staged by: bash bench/gpu/stage.sh bench/gpu/39-one-pass-joins/d - lib collective_props device_groups joins plans cuda_ops typed faults first_hour cuda_copies
# Invoked as: timeout -k 5 420 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t lib lib 150 --test-threads 2
t props collective_props 120 --test-threads 2 --nocapture
t groups device_groups 150 --test-threads 2
for b in joins plans cuda_ops typed first_hour cuda_copies; do t $b $b 60 --test-threads 2; done
COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 90 --nocapture
grep -h -E "^total:" $L/t_faults.log
grep -h -E "panicked|FAILED|skipped|minimal failing" $L/t_*.log | head -20
unset REQUIRE_CUDA REQUIRE_VULKAN
for d in cuda:0,cpu:0 cuda:0,cpu:0,cpu:1,cpu:2; do
  p small_${d//[:,]/_} perf --op all_gather,reduce_scatter,all_to_all,broadcast,scatter --devices $d --sizes 4K,64K --iters 100 --warmup 10
  COLLECTIVES_LOG=debug p steps_${d//[:,]/_} perf --op reduce_scatter,all_to_all,broadcast,scatter --devices $d --sizes 4K --iters 10 --warmup 3
done
for r in 1 2; do
  p lr_$r perf --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
  p ch_$r perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
