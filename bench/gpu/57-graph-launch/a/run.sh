#!/bin/bash
# Run 57a: the tree as committed after run 56 (its reduce kernels without run 56's
# `__grid_constant__` trial), on the GPU: `graph_launch_probe` (a kernel launched from a CUDA graph
# against the same kernel launched directly); issue 14's 4 KiB rows and eight virtual devices'
# all_to_all and all_gather, three rounds; anchors; the `lib` tests, `cuda_native` on eight virtual
# devices and `cuda_copies` on the tree as committed (run 56 tested the wide copy kernel with both of its trials
# applied; the tests and probes committed after it had not run on a GPU).
# Staged by: bash bench/gpu/stage.sh bench/gpu/57-graph-launch/a - lib cuda_native cuda_copies
# Invoked as: timeout -k 5 330 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t gprobe lib 120 --ignored --nocapture --exact backend::cuda::probe::graph::graph_launch_probe
grep -h "^probe:" $L/t_gprobe.log
I="--sizes 4K --iters 1000 --warmup 100"
V8=0,0,0,0,0,0,0,0 D8=cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7
for r in 1 2 3; do
  p lr_$r perf --op local_reduce --devices cuda:0 $I
  p ch_$r perf --op all_reduce --devices cuda:0,cpu:0 $I
  COLLECTIVES_CUDA_DEVICES=0,0 p v2_$r perf --op all_reduce --devices cuda:0,cuda:1 $I
  p c8_$r perf --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 $I
  COLLECTIVES_CUDA_DEVICES=$V8 p v8_$r perf --op all_to_all,all_gather --devices $D8 --sizes 4K,64K,1M --iters 300 --warmup 30
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
t lib1 lib 150
COLLECTIVES_CUDA_DEVICES=$V8 t native8 cuda_native 90 --test-threads 2
t copies cuda_copies 40
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
