#!/bin/bash
# Run 48d: the tree as submitted (run c's rule, with the Vulkan host-memory bound read too and
# site looking for the CUDA device first): the Vulkan leader's reduce and the one-shot
# reduce_scatter rows of run c, one round; anchors; the tests this change reaches.
# Staged by: bash bench/gpu/stage.sh bench/gpu/48-host-time/d - lib plans typed device_groups vulkan_collectives faults (at 15079df)
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
A="--iters 100 --warmup 10"
p g_vcR_perf_1 perf --op reduce,gather --devices vulkan:0,cuda:0 --sizes 4K,64K,240K,256K $A
p g_vcO_perf_1 perf --op all_reduce,reduce_scatter --algo oneshot --devices vulkan:0,cuda:0 --sizes 4K,64K $A
p g_vxc_perf_1 perf --op reduce --devices vulkan:0,cpu:0,cuda:0 --sizes 4K,64K $A
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t plans plans 40
t vcoll vulkan_collectives 60
t typed typed 40
t lib lib 100 --test-threads 4
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 90 --show-output
grep -h "^total:" $L/t_faults2.log
t groups device_groups 150 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
