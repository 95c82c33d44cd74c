#!/bin/bash
# Run 46d: the fault sweep with its new small groups of a CUDA member staged through the host
# (`cpu x2+cuda, small`: every small case; `cpu+cuda, small` and `cuda x2+cpu, small`: the
# all_to_all), on two virtual CUDA devices with the Vulkan device; `plans` (its new hardware-free
# test of the rule); `device_groups`' two new tests again on two virtual CUDA devices.
# Staged by: bash bench/gpu/stage.sh bench/gpu/46-cuda-staged/d - faults plans device_groups (at 6c1d437)
# Invoked as: timeout -k 5 200 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 150 --nocapture
grep -h -E "^total:" $L/t_faults.log
grep -h -E "small" $L/t_faults.log | grep -E "cuda"
t plans plans 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t groups2 device_groups 60 small_ --nocapture
grep -h "checked on both sides" $L/t_groups2.log
grep -h -E "panicked|FAILED|minimal failing" $L/t_*.log | head -20
date
