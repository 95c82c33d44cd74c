#!/bin/bash
# Run 49d: the trial (d/trial.diff, with backend/fanned.rs new): a small all_reduce, all_gather or
# reduce_scatter of one CUDA device beside host and Vulkan devices as one kernel of the CUDA
# device, its result delivered to the others in its step (COLLECTIVES_TRIAL_FANNED=1, perf_x)
# against the tree without it (perf: staged through the host, or the graph), one binary, three
# rounds; a host profile of the 4 KiB all_reduce of cuda:0,vulkan:0 fanned; then the
# numeric tests of mixed groups with the trial on.
# Staged by: bash bench/gpu/stage.sh bench/gpu/49-pair-calls/d - collective_props device_groups joins first_hour typed vulkan_collectives (at e45e8cf + d/trial.diff); then perf_prof: cargo build --release -p collectives-examples --example perf --features profile, strip --strip-debug, xz into .gpu/perf_prof.xz
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && xz -dc $G/perf_prof.xz > $G/perf_prof && chmod +x $G/perf_prof && source $G/env.sh && source $G/steps.sh
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
COLLECTIVES_TRIAL_FANNED=1 p cvx_prof perf_prof --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K --iters 300000 --warmup 100 --no-check --profile $L/prof_cvx
for f in $L/prof_*/*.txt; do echo "== $f"; sed -n 1,24p $f; done
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
