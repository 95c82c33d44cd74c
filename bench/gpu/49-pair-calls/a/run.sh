#!/bin/bash
# Run 49a: where main's 4 KiB and 64 KiB calls stand, every collective over the small groups
# (CUDA beside a host device, beside a Vulkan device, virtual CUDA devices, host devices); anchors;
# the plan, typed and mixed-group tests on main's head (7b66c57's walk not yet run on a GPU).
# Staged by: bash bench/gpu/stage.sh bench/gpu/49-pair-calls/a - plans typed vulkan_collectives device_groups (at 161dd4d)
# Invoked as: timeout -k 5 420 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nproc
OPS=all_reduce,reduce,reduce_scatter,all_gather,broadcast,scatter,gather,all_to_all
A="--sizes 4K,64K --iters 1000 --warmup 50"
for r in 1 2; do
  p lr_$r perf --op local_reduce --devices cuda:0 $A
  p ch_$r perf --op $OPS --devices cuda:0,cpu:0 $A
  p hc_$r perf --op $OPS --devices cpu:0,cuda:0 $A
  p cv_$r perf --op $OPS --devices cuda:0,vulkan:0 $A
  p vc_$r perf --op $OPS --devices vulkan:0,cuda:0 $A
  p c3_$r perf --op $OPS --devices cuda:0,cpu:0,cpu:1,cpu:2 $A
  COLLECTIVES_CUDA_DEVICES=0,0 p v2_$r perf --op $OPS --devices cuda:0,cuda:1 $A
  COLLECTIVES_CUDA_DEVICES=0,0,0,0 p v4_$r perf --op $OPS --devices cuda:0,cuda:1,cuda:2,cuda:3 $A
  p h8_$r perf --op $OPS --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 $A
done
timeout 60 python3 $G/anchors.py --sizes 4K,64K,1M --iters 10 > $L/anchors.log 2>&1; tail -3 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t plans plans 40
t typed typed 40
t vcoll vulkan_collectives 60
t groups device_groups 150 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
