#!/bin/bash
# Run 50h: after the review's mends (a shared helper for the fanned calls' equal parts; the
# one-pass test's slices checked once per row count): the one-pass and fanned unit tests, the
# plan and mixed-group tests, and the pairs' 4 KiB all_to_all once, beside anchors.
# Staged by: bash bench/gpu/stage.sh bench/gpu/50-all-to-all/h - lib plans device_groups
# Invoked as: timeout -k 5 200 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
p h_ch_perf_1 perf --op all_to_all,reduce_scatter --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
p h_c3_perf_1 perf --op all_to_all --devices cuda:0,cpu:0,cpu:1 --sizes 4K,64K --iters 500 --warmup 50
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t lib_mapped lib 60 backend::cuda::mapped
t lib_fanned lib 60 fanned
t plans plans 30
t groups device_groups 130 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
