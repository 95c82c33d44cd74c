#!/bin/bash
# Run 49g: the rule as submitted (the all_reduce and all_gather of a CUDA device and a host device
# alone back on the graph): their 4 KiB rows beside the fanned pairs', one round; anchors; the
# plan, property and mixed-group tests.
# Staged by: bash bench/gpu/stage.sh bench/gpu/49-pair-calls/g - plans collective_props device_groups (at 624f267)
# Invoked as: timeout -k 5 200 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
A="--op all_reduce,all_gather,reduce_scatter --sizes 4K --iters 1000 --warmup 50"
r=1
p g_ch_perf_$r perf --devices cuda:0,cpu:0 $A
p g_hc_perf_$r perf --devices cpu:0,cuda:0 $A
p g_vc_perf_$r perf --devices vulkan:0,cuda:0 $A
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t plans plans 30
t props collective_props 40
t groups device_groups 130 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
