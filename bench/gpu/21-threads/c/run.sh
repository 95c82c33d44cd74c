#!/bin/bash
# GPU run 21c (one H200): main at 9907844 (same binaries as run b). The step timeline
# (COLLECTIVES_LOG=debug) of the 4 KiB all_to_all of cuda:0,vulkan:0,cpu:0 (450-550 us in run b)
# beside its reduce_scatter and all_gather; then the one vulkan_ops test run b's 150 s cut off
# (reduce_every_kind_with_and_without_scale), alone, with room.
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
for op in all_to_all reduce_scatter all_gather; do
  COLLECTIVES_LOG=debug timeout 60 $G/perf --op $op --devices cuda:0,vulkan:0,cpu:0 --sizes 4K --iters 3 --warmup 3 > $L/dbg_$op.log 2>&1
  echo "== $op"; grep -A14 "realize steps" $L/dbg_$op.log | tail -15; grep -E '^ +[a-z_]+ +[0-9]' $L/dbg_$op.log
done
s=$(date +%s); timeout 330 $G/vulkan_ops reduce_every_kind_with_and_without_scale > $L/t_vulkan_ops_reduce.log 2>&1
echo "vulkan_ops reduce rc=$? $(( $(date +%s) - s ))s $(grep -E '^test result' $L/t_vulkan_ops_reduce.log)"
date
