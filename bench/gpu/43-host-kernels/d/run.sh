#!/bin/bash
# Run 43d: `lib` again after run c's two failures, both in the new tests of `on_host.rs` (the
# reference of a bf16 cast, and the bound test's first sum in device memory on an NVIDIA GPU),
# fixed in the commit this run was staged at.
# Staged by: bash bench/gpu/stage.sh bench/gpu/43-host-kernels/d - lib
# Invoked as: timeout -k 5 200 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t lib lib 150 --test-threads 2
for i in 1 2 3; do t onhost$i lib 60 on_host; done
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
