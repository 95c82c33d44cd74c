#!/bin/bash
# Run 49f: the tree as submitted (061851e: the host-led star's CUDA hub, the fanned calls)
# against the session's start (161dd4d, perf_old), three rounds: every group whose small calls
# changed, and issue 14's 4 KiB rows; anchors; then every GPU-facing test binary but vulkan_ops
# (nothing it runs changed).
# Staged by: bash bench/gpu/stage.sh bench/gpu/49-pair-calls/f 161dd4d lib plans typed joins cuda_ops cuda_copies cuda_faults cuda_native device_groups vulkan_collectives comm_nccl first_hour faults collective_props (at 061851e)
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
A="--op all_reduce,all_gather,reduce_scatter --sizes 4K,64K --iters 400 --warmup 20"
both() { local tag=$1; shift; p g_${tag}_perf_old_$r perf_old "$@"; p g_${tag}_perf_$r perf "$@"; }
for r in 1 2 3; do
  both cv --devices cuda:0,vulkan:0 $A
  both vc --devices vulkan:0,cuda:0 $A
  both ch --devices cuda:0,cpu:0 $A
  both hc --devices cpu:0,cuda:0 $A
  both chhh --devices cuda:0,cpu:0,cpu:1,cpu:2 $A
  both hhhc --devices cpu:0,cpu:1,cpu:2,cuda:0 $A
  both hc1M --devices cpu:0,cuda:0 --op all_reduce,reduce_scatter --sizes 1M --iters 100 --warmup 5
  both lr --op local_reduce --devices cuda:0 --sizes 4K --iters 3000 --warmup 100
  both h8 --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 --sizes 4K --iters 3000 --warmup 100
  COLLECTIVES_CUDA_DEVICES=0,0 both v2 --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 3000 --warmup 100
done
timeout 60 python3 $G/anchors.py --sizes 4K,64K,1M --iters 10 > $L/anchors.log 2>&1; tail -3 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t lib lib 100 --test-threads 4
t plans plans 40
t typed typed 40
t joins joins 40 --test-threads 2
t ops cuda_ops 40 --test-threads 2
t copies cuda_copies 30
t cfaults cuda_faults 40
COLLECTIVES_CUDA_DEVICES=0,0,0 t native3 cuda_native 80 --test-threads 2
t vcoll vulkan_collectives 60
t nccl comm_nccl 40
t first first_hour 40
t props collective_props 90
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 70 --show-output
grep -h "^total:" $L/t_faults2.log
t groups device_groups 150 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
