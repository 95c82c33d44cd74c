#!/bin/bash
# Run 40d (88bc92d): a contiguous host slice (a view) writes no fanout (`exec/schedule.rs`): its
# copy to another host device stays a copy, which a host join places straight into its range —
# a mixed all_to_all's host parts of other host members' shards. The GPU tests that run mixed
# groups; then this build (`perf`) against run b's (ff87ad3, `perf_b`): the all_to_all, scatter,
# gather and all_gather of one CUDA device and three host devices, and with a Vulkan member,
# three rounds, the binaries' order alternating; a step log; the anchors.
# Staged by: bash bench/gpu/stage.sh bench/gpu/40-ranged-parts/d ff87ad3 lib collective_props device_groups joins plans typed
#   then perf_old renamed perf_b in bins.tar.xz.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t lib lib 150 --test-threads 2
t props collective_props 120 --test-threads 2 --nocapture
t groups device_groups 150 --test-threads 2
for b in joins plans typed; do t $b $b 60 --test-threads 2; done
grep -h -E "panicked|FAILED|skipped|minimal failing" $L/t_*.log | head -20
unset REQUIRE_CUDA REQUIRE_VULKAN
for r in 1 2 3; do
  order="perf perf_b"; [ $r = 2 ] && order="perf_b perf"
  for b in $order; do
    for d in cuda:0,cpu:0,cpu:1,cpu:2 cuda:0,vulkan:0,cpu:0,cpu:1; do
      p x_${b}_${r}_${d//[:,]/_} $b --op all_to_all,scatter,gather,all_gather --devices $d --sizes 4K,64K,256K --iters 100 --warmup 10
    done
  done
done
COLLECTIVES_LOG=debug p steps perf --op all_to_all --devices cuda:0,cpu:0,cpu:1,cpu:2 --sizes 4K --iters 10 --warmup 3
grep -A24 "realize steps" $L/steps.log | tail -25
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
