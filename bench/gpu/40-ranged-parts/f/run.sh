#!/bin/bash
# Run 40f (9d4c3ee, the session's final library): every GPU test binary, and issue 14's 4 KiB
# rows with the anchors.
# Staged by: bash bench/gpu/stage.sh bench/gpu/40-ranged-parts/f - lib collective_props device_groups joins plans cuda_ops typed first_hour cuda_copies faults
# Invoked as: timeout -k 5 500 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
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
p small perf --op all_reduce,reduce_scatter,all_gather,all_to_all,local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 1000 --warmup 100
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
