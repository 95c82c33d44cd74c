#!/bin/bash
# Run 47c: the GPU tests run b left out or failed, at 0c319ff (c70c27a's rule, and the tests'
# `device_bridged` planning its broadcast at `HOST_STAGED_BELOW_BYTES`: run b's two `plans`
# failures were that helper seeing the pair's 4-byte broadcast staged, with no bridge): `plans`,
# `typed`, `device_groups` whole, `joins`, `collective_coalesced`, `collective_props`.
# Staged by: bash bench/gpu/stage.sh bench/gpu/47-vulkan-pair/c - plans typed device_groups joins collective_coalesced collective_props
# Invoked as: timeout -k 5 330 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t plans plans 60 --test-threads 2
t typed typed 60 --test-threads 2
t groups device_groups 150 --test-threads 2
t joins joins 60 --test-threads 2
t coalesced collective_coalesced 60 --test-threads 2
t props collective_props 100 --test-threads 2
grep -h -E "panicked|FAILED|minimal failing" $L/t_*.log | head -20
date
