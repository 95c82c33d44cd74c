#!/bin/bash
# Run 50a: the small all_to_all of one CUDA device beside host or Vulkan devices as one CUDA
# kernel fanned out (COLLECTIVES_TRIAL_A2A=1) against the rule before (staged through the host),
# one binary, three rounds; anchors; the one-pass concat and fanned unit tests; the tests that
# run mixed all_to_alls with the trial on (props, moves, typed) and the plan tests with it off.
# Staged by: bash bench/gpu/stage.sh bench/gpu/50-all-to-all/a - lib plans collective_props collective_moves typed device_groups
# Invoked as: timeout -k 5 420 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
A="--op all_to_all --sizes 4K,16K,64K,96K --iters 500 --warmup 50"
for r in 1 2 3; do
  for g in ch:cuda:0,cpu:0 hc:cpu:0,cuda:0 cv:cuda:0,vulkan:0 vc:vulkan:0,cuda:0 c3:cuda:0,cpu:0,cpu:1,cpu:2 h3:cpu:0,cpu:1,cpu:2,cuda:0 c5:cuda:0,cpu:0,cpu:1,cpu:2,cpu:3; do
    tag=${g%%:*}; dev=${g#*:}
    p a_${tag}_perf_$r perf --devices $dev $A
    COLLECTIVES_TRIAL_A2A=1 p a_${tag}_perf_x_$r perf --devices $dev $A
  done
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t lib_mapped lib 60 backend::cuda::mapped
t lib_fanned lib 60 fanned
t plans plans 30
COLLECTIVES_TRIAL_A2A=1 t props_x collective_props 60
COLLECTIVES_TRIAL_A2A=1 t moves_x collective_moves 60
COLLECTIVES_TRIAL_A2A=1 t typed_x typed 40
t groups device_groups 130 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
