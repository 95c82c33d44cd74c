#!/bin/bash
# Run 48f: the tree as submitted (small views of Vulkan device memory fused where the pair is one
# GPU, the device bridge; run e's build fused them through a peer too, which one GPU never has):
# run e's 256 and 384 KiB rows, one round; the tests that reach the change.
# Staged by: bash bench/gpu/stage.sh bench/gpu/48-host-time/f - plans device_groups vulkan_collectives (at c6c5adf)
# Invoked as: timeout -k 5 300 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
A="--iters 50 --warmup 5"
for D in cuda:0,vulkan:0 vulkan:0,cuda:0; do
  p g_${D//[:,]/}A_perf_1 perf --op all_to_all --devices $D --sizes 128K,256K,384K $A
  p g_${D//[:,]/}O_perf_1 perf --op reduce_scatter --algo oneshot --devices $D --sizes 256K,384K $A
done
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t parts device_groups 100 parts_of --nocapture
t plans plans 40
t vcoll vulkan_collectives 60
t groups device_groups 150 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
