#!/bin/bash
# Run 47e: `device_groups`' small staged tests at cfdcbc0, where `check_plan` shares its plan-shape
# check with the hardware-free rule test (`staged_call`: a staged call is also the plan's only
# kernel), on one GPU and on two virtual CUDA devices.
# Staged by: bash bench/gpu/stage.sh bench/gpu/47-vulkan-pair/e - device_groups
# Invoked as: timeout -k 5 90 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t groups device_groups 40 small_ --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t groups2 device_groups 40 small_ --nocapture
grep -h "checked on both sides" $L/t_groups2.log
grep -h -E "panicked|FAILED" $L/t_*.log | head -10
