#!/bin/bash
# Run 56b: the rest of run 56a's tests, on the same lease and binaries.
# Staged by: run 56a's staging (the same .gpu/)
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
COLLECTIVES_CUDA_DEVICES=0,0 t lib2 lib 150
COLLECTIVES_CUDA_DEVICES=0,0 t native2 cuda_native 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0 t native3 cuda_native 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0,0 t native4 cuda_native 60 --test-threads 2
t moves collective_moves 30
t plans plans 30
COLLECTIVES_CUDA_DEVICES=0,0 t plans2 plans 30
t joins joins 40
t groups device_groups 130 --test-threads 2
t typed typed 30
t issued1 issued 90
COLLECTIVES_CUDA_DEVICES=0,0,0,0 t issued4 issued 90
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
