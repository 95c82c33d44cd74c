#!/bin/bash
# Run 49e: run d's trial (e/trial.diff) with one whole copy delivered to one host device in the
# kernel's pass, every other member's output a view of it or copied from it (run d delivered
# each member's range, a second launch for a reduce_scatter): COLLECTIVES_TRIAL_FANNED=1
# (perf_x) against the tree without it (perf), one binary, three rounds; then the numeric tests
# of mixed groups with the trial on.
# Staged by: bash bench/gpu/stage.sh bench/gpu/49-pair-calls/e - collective_props device_groups joins first_hour typed vulkan_collectives (at e45e8cf + e/trial.diff)
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
A="--op all_reduce,all_gather,reduce_scatter --sizes 4K,16K,64K,96K --iters 400 --warmup 20"
row() { local tag=$1; shift
  p g_${tag}_perf_$r perf "$@"
  COLLECTIVES_TRIAL_FANNED=1 p g_${tag}_perf_x_$r perf "$@"; }
for r in 1 2 3; do
  row cv --devices cuda:0,vulkan:0 $A
  row vc --devices vulkan:0,cuda:0 $A
  row ch --devices cuda:0,cpu:0 $A
  row hc --devices cpu:0,cuda:0 $A
  row chhh --devices cuda:0,cpu:0,cpu:1,cpu:2 $A
  row hvc --devices cpu:0,vulkan:0,cuda:0 $A
  row cvh --devices cuda:0,vulkan:0,cpu:0 $A
done
timeout 60 python3 $G/anchors.py --sizes 4K,64K,1M --iters 10 > $L/anchors.log 2>&1; tail -3 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1 COLLECTIVES_TRIAL_FANNED=1
t props collective_props 90
t typed typed 40
t vcoll vulkan_collectives 60
t joins joins 40 --test-threads 2
t first first_hour 40
t groups device_groups 150 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -30
date
