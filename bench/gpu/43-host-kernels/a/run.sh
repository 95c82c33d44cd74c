#!/bin/bash
# Run 43a (staged for the next session with a machine; none was lent on 2026-12-05): small
# Vulkan kernels of tensors in host memory run by the host (`backend/vulkan/on_host.rs`). The GPU
# tests: `vulkan_ops` and `joins` with the default bound and again with every kernel on the device
# (`COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=0`), `lib` (also the CUDA tests d95b0ca changed, not run
# on a GPU since), `vulkan_collectives`, `collective_props`, `device_groups`, the fault sweep.
# Staged by: bash bench/gpu/stage.sh bench/gpu/43-host-kernels/a - lib vulkan_ops joins vulkan_collectives collective_props device_groups faults
# Invoked as: timeout -k 5 590 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t ops vulkan_ops 170 --test-threads 4 --skip big
COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=0 t ops0 vulkan_ops 170 --test-threads 4 --skip big --skip copy::
t joins joins 60 --test-threads 2
COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=0 t joins0 joins 60 --test-threads 2
t lib lib 150 --test-threads 2
t vkcoll vulkan_collectives 60 --test-threads 2
t props collective_props 120 --test-threads 2
t groups device_groups 150 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 90 --nocapture
grep -h -E "^total:" $L/t_faults.log
grep -h -E "panicked|FAILED|skipped|minimal failing" $L/t_*.log | head -20
date
