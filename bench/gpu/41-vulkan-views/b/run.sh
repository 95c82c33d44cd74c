#!/bin/bash
# Run 41b (b810f89, run a's binaries): `vulkan_ops` whole with room to finish (run a's 150 s
# limit stopped it in `elementwise::reduce_every_kind_with_and_without_scale`, after the three
# view tests had passed), then a third round of run a's comparison and one at 4 KiB (tensors in
# host memory, where an unaligned slice was a copy by the host), the order rotated; the anchors.
# Staged by: run a's staging (bench/gpu/41-vulkan-views/a/run.sh), this run.sh copied to .gpu/.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t vkops vulkan_ops 330 --test-threads 4
grep -h -E "panicked|FAILED|skipped" $L/t_*.log | head -20
unset REQUIRE_CUDA REQUIRE_VULKAN
for r in 3; do
  for b in perf_old perf; do
    for d in vulkan:0,cpu:0,cpu:1 cuda:0,vulkan:0,cpu:0 vulkan:0,cpu:0,cpu:1,cpu:2; do
      p x_${b}_${r}_${d//[:,]/_} $b --op all_to_all,scatter,reduce_scatter --devices $d --sizes 4K,64K,1M,4M,16M --iters 30 --warmup 5
    done
  done
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
