#!/bin/bash
# Run 47d: `plans` at a0e786b, where its one-GPU test shows the Vulkan leader's small join at
# `HOST_STAGED_CUDA_PAIR_BELOW_BYTES` (run c's failure: its 16 KiB all_to_all of
# `vulkan:0,cuda:0` is now one host call, as the rule says).
# Staged by: bash bench/gpu/stage.sh bench/gpu/47-vulkan-pair/d - plans
# Invoked as: timeout -k 5 60 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t plans plans 40 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -10
