#!/bin/bash
# Run 41e (3dd2084, the session's final tree: the library as b810f89, with the views' property
# test and the joins test's case of two parts from one CUDA device): every GPU test binary.
# Staged by: bash bench/gpu/stage.sh bench/gpu/41-vulkan-views/e - lib vulkan_ops vulkan_collectives joins collective_props device_groups faults plans typed cuda_ops first_hour cuda_copies
# Invoked as: timeout -k 5 450 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t views vulkan_ops 60 --test-threads 2 views
t joins joins 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t joins2 joins 60 --test-threads 2
t lib lib 120 --test-threads 2
t props collective_props 60 --test-threads 2
t groups device_groups 120 --test-threads 2
for b in vulkan_collectives plans cuda_ops typed first_hour cuda_copies; do t $b $b 60 --test-threads 2; done
COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 60 --nocapture
grep -h -E "^total:" $L/t_faults.log
grep -h -E "panicked|FAILED|skipped|minimal failing" $L/t_*.log | head -20
date
