#!/bin/bash
# Run 39e: the one-pass concat and slice test as split after run d (afc8b78: concat_of,
# slice_of, check_everywhere; the upload fallback its own test), with the other unit tests of
# the one-pass path and the direct step.
# Staged by: bash bench/gpu/stage.sh bench/gpu/39-one-pass-joins/e - lib
# Invoked as: timeout -k 5 120 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t lib lib 100 --test-threads 2 backend::cuda::mapped backend::cuda::stream exec:: backend::cpu backend::kernel
grep -E "^test .*(mapped|direct|stream)::" $L/t_lib.log | head -30
grep -h -E "panicked|FAILED|skipped" $L/t_*.log | head -20
date
