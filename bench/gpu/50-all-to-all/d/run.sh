#!/bin/bash
# Run 50d: the segment copy kernel striding over the segments' units as one run (perf) against
# each thread copying the segments in turn (COLLECTIVES_TRIAL_SEGLOOP=1, perf_x: the kernel before
# 91ad45f), one binary, four interleaved rounds (order flipped each round): the calls run 50c read
# either way; anchors; the plan tests after their fix (d28d3eb + the test change).
# Staged by: bash bench/gpu/stage.sh bench/gpu/50-all-to-all/d - plans device_groups
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S="--sizes 4K,64K,1M --iters 300 --warmup 30"
rows() {
  local tag=$1
  p s_ch_${tag} perf --op all_gather,all_to_all --devices cuda:0,cpu:0 $S
  p s_cv_${tag} perf --op all_to_all --devices cuda:0,vulkan:0 --sizes 4K,16K --iters 500 --warmup 50
  COLLECTIVES_CUDA_DEVICES=0,0,0,0 p s_v4_${tag} perf --op all_gather,all_to_all --devices cuda:0,cuda:1,cuda:2,cuda:3 $S
  COLLECTIVES_CUDA_DEVICES=0,0 p s_v2_${tag} perf --op all_gather,all_to_all --devices cuda:0,cuda:1 $S
}
trial() { export COLLECTIVES_TRIAL_SEGLOOP=1; rows perf_x_$1; unset COLLECTIVES_TRIAL_SEGLOOP; }
for r in 1 2 3 4; do
  if [ $((r % 2)) = 1 ]; then trial $r; rows perf_$r; else rows perf_$r; trial $r; fi
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t plans plans 30
t groups device_groups 130 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
