#!/bin/bash
# Run 53b, on run a's lease right after it: the GPU-facing test binaries on c0eb32f
# (`REQUIRE_CUDA=1 REQUIRE_VULKAN=1`), those on the reduce's path first; `lib`, the fault sweep and
# the native collectives on virtual devices (2, then 3, 4 and 8).
# Staged by: run a's staging, with this file copied to .gpu/run_b.sh
# Invoked as: timeout -k 5 480 bash .gpu/run_b.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
COLLECTIVES_CUDA_DEVICES=0,0 t lib2 lib 100
COLLECTIVES_CUDA_DEVICES=0,0 t native2 cuda_native 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 60 --show-output
grep -h "^total:" $L/t_faults2.log
t groups device_groups 130 --test-threads 2
t cuda_ops cuda_ops 40
t cuda_copies cuda_copies 40
t cfaults cuda_faults 40
COLLECTIVES_CUDA_DEVICES=0,0,0 t native3 cuda_native 40 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0,0 t native4 cuda_native 50 --test-threads 2
t joins joins 40
t moves collective_moves 30
t typed typed 30
t props collective_props 40
t vcoll vulkan_collectives 60
COLLECTIVES_CUDA_DEVICES=0,0 t plans2 plans 30
t first first_hour 60
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native8 cuda_native 70 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
