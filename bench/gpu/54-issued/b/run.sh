#!/bin/bash
# Run 54b, on run a's lease right after it: the GPU-facing test binaries on this tree
# (`REQUIRE_CUDA=1 REQUIRE_VULKAN=1`): realize's paths (every one of them now caches through
# `exec::cache`) and `issue` on four virtual devices.
# Staged by: run a's staging (c4105e5's test binaries, named in its stage.sh line), then
#   4073fa3's `faults` (every other injected failure issued, then waited for; built by
#   `cargo test -p collectives-tests --features slow,failpoints --test faults`, stripped) put in
#   .gpu/bins.tar.xz in place of c4105e5's; this file copied to .gpu/run_b.sh
# Invoked as: timeout -k 5 420 bash .gpu/run_b.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
COLLECTIVES_CUDA_DEVICES=0,0,0,0 t issued4 issued 90
COLLECTIVES_CUDA_DEVICES=0,0 t lib2 lib 100
COLLECTIVES_CUDA_DEVICES=0,0 t native2 cuda_native 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 60 --show-output
grep -h "^total:" $L/t_faults2.log
t groups device_groups 130 --test-threads 2
t cuda_ops cuda_ops 40
t cuda_copies cuda_copies 40
t cfaults cuda_faults 40
t joins joins 40
t moves collective_moves 30
t typed typed 30
t vcoll vulkan_collectives 60
COLLECTIVES_CUDA_DEVICES=0,0 t plans2 plans 30
t first first_hour 60
COLLECTIVES_CUDA_DEVICES=0,0,0,0 t native4 cuda_native 50 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
