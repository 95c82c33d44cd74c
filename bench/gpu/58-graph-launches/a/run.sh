#!/bin/bash
# Run 58a: CUDA kernels launched through their stream's graph (`backend/cuda/relaunch.rs`, on with
# COLLECTIVES_CUDA_GRAPH_LAUNCH=1, off by default until this run shows it), on the GPU: the graph
# test; issue 14's 4 KiB CUDA rows and eight virtual devices' star calls with graphs off (=0) and
# on (=1), three rounds in turn; anchors; then every GPU test binary with graphs on, the ones
# most telling first (a short lease cuts only the tail).
# Staged by: bash bench/gpu/stage.sh bench/gpu/58-graph-launches/a - lib cuda_native cuda_copies collective_props collective_moves plans joins device_groups typed issued
# Invoked as: timeout -k 5 470 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t graphs lib 60 --exact backend::cuda::relaunch::tests::launches_in_flight_keep_their_own_parameters
I="--sizes 4K --iters 1000 --warmup 100"
V8=0,0,0,0,0,0,0,0 D8=cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7
for r in 1 2 3; do
  for g in 0 1; do
    export COLLECTIVES_CUDA_GRAPH_LAUNCH=$g
    p lr_g${g}_$r perf --op local_reduce --devices cuda:0 $I
    p ch_g${g}_$r perf --op all_reduce --devices cuda:0,cpu:0 $I
    COLLECTIVES_CUDA_DEVICES=0,0 p v2_g${g}_$r perf --op all_reduce --devices cuda:0,cuda:1 $I
    COLLECTIVES_CUDA_DEVICES=$V8 p v8_g${g}_$r perf --op all_reduce,all_to_all,all_gather --devices $D8 --sizes 4K,1M --iters 300 --warmup 30
    p lri_g${g}_$r perf --op local_reduce --devices cuda:0 $I --in-flight 8
  done
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export COLLECTIVES_CUDA_GRAPH_LAUNCH=1
t lib1 lib 150
COLLECTIVES_CUDA_DEVICES=$V8 t native8 cuda_native 90 --test-threads 2
t copies cuda_copies 40
COLLECTIVES_CUDA_DEVICES=0,0,0,0 t issued4 issued 90
t plans plans 30
t joins joins 40
t typed typed 30
t moves collective_moves 30
t props collective_props 120
t groups device_groups 130 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t lib2 lib 150
for n in 0,0 0,0,0,0; do COLLECTIVES_CUDA_DEVICES=$n t native$(( (${#n} + 1) / 2 )) cuda_native 90 --test-threads 2; done
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
