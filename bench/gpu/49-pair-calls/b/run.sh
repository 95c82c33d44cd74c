#!/bin/bash
# Run 49b: the trial (b/trial.diff): a host-led group with a CUDA member folds and joins its star
# on that CUDA device (COLLECTIVES_TRIAL_CUDA_HUB=1, perf_x rows) against the leader (perf rows),
# one binary, two rounds interleaved; the CUDA-led pair as the reference; the host-led pair's
# one-shot reduce_scatter; then the tests with the trial on.
# Staged by: bash bench/gpu/stage.sh bench/gpu/49-pair-calls/b - plans typed vulkan_collectives device_groups collective_props joins first_hour (at 161dd4d + b/trial.diff)
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
OPS=all_reduce,reduce_scatter,all_gather
S="--sizes 4K,64K,1M --iters 400 --warmup 20"
B="--sizes 16M,256M --iters 10 --warmup 2"
M="--sizes 16M --iters 10 --warmup 2"
row() { local tag=$1; shift
  p g_${tag}_perf_$r perf "$@"
  COLLECTIVES_TRIAL_CUDA_HUB=1 p g_${tag}_perf_x_$r perf "$@"; }
for r in 1 2; do
  row hc --op $OPS --devices cpu:0,cuda:0 $S
  row hcB --op $OPS --devices cpu:0,cuda:0 $B
  row hhhc --op $OPS --devices cpu:0,cpu:1,cpu:2,cuda:0 $S
  row hhhcB --op $OPS --devices cpu:0,cpu:1,cpu:2,cuda:0 $M
  row hvc --op $OPS --devices cpu:0,vulkan:0,cuda:0 $S
  row hvcB --op $OPS --devices cpu:0,vulkan:0,cuda:0 $M
  COLLECTIVES_CUDA_DEVICES=0,0 row hcc --op $OPS --devices cpu:0,cuda:0,cuda:1 $S
  COLLECTIVES_CUDA_DEVICES=0,0 row hccB --op $OPS --devices cpu:0,cuda:0,cuda:1 $M
done
p g_ch_perf_1 perf --op $OPS --devices cuda:0,cpu:0 $S
p g_chB_perf_1 perf --op $OPS --devices cuda:0,cpu:0 $B
p g_hcO_perf_1 perf --op reduce_scatter --algo oneshot --devices cpu:0,cuda:0 --sizes 1M,16M,256M --iters 10 --warmup 2
timeout 60 python3 $G/anchors.py --sizes 4K,64K,1M,16M --iters 10 > $L/anchors.log 2>&1; tail -4 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1 COLLECTIVES_TRIAL_CUDA_HUB=1
t plans plans 40
t typed typed 40
t vcoll vulkan_collectives 60
t props collective_props 60
t joins joins 40 --test-threads 2
t first first_hour 40
t groups device_groups 150 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
