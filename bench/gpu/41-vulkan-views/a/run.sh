#!/bin/bash
# Run 41a (b810f89): a Vulkan slice is a view wherever it starts (`backend/vulkan/view.rs`): bound
# from the aligned byte below its start, with a skew the copies and kernels skip. The Vulkan
# tests on the NVIDIA Vulkan driver (views at every element of every dtype, `vulkan_ops`); then
# this build (`perf`) against the tree before (a81b35a, `perf_old`): the all_to_all, scatter and
# reduce_scatter of three-member groups with a Vulkan member, whose parts (a third of the shard)
# start off 16-byte blocks, and of a four-member group, whose parts do not (the control); two
# rounds, the binaries' order alternating; the anchors.
# Staged by: bash bench/gpu/stage.sh bench/gpu/41-vulkan-views/a a81b35a lib vulkan_ops vulkan_collectives joins collective_props
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t vkops vulkan_ops 150 --test-threads 2
t lib lib 150 --test-threads 2
t vkcoll vulkan_collectives 120 --test-threads 2
t joins joins 60 --test-threads 2
t props collective_props 120 --test-threads 2
grep -h -E "panicked|FAILED|skipped|minimal failing" $L/t_*.log | head -20
unset REQUIRE_CUDA REQUIRE_VULKAN
for r in 1 2; do
  order="perf perf_old"; [ $r = 2 ] && order="perf_old perf"
  for b in $order; do
    for d in vulkan:0,cpu:0,cpu:1 cuda:0,vulkan:0,cpu:0 vulkan:0,cpu:0,cpu:1,cpu:2; do
      p x_${b}_${r}_${d//[:,]/_} $b --op all_to_all,scatter,reduce_scatter --devices $d --sizes 64K,1M,4M,16M --iters 30 --warmup 5
    done
  done
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
