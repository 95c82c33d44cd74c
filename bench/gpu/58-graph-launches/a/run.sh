#!/bin/bash
# Run 58a: every CUDA kernel launched through its stream's graph (`backend/cuda/relaunch.rs`), on
# the GPU: the graph test; issue 14's 4 KiB CUDA rows with graphs off (COLLECTIVES_CUDA_GRAPH_LAUNCH=0)
# and on (the default), three rounds in turn; anchors; the `lib` tests with graphs on (what the
# device time left allowed).
# Staged by: bash bench/gpu/stage.sh bench/gpu/58-graph-launches/a - lib
# Invoked as: timeout -k 5 200 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t graphs lib 60 --exact backend::cuda::relaunch::tests::launches_in_flight_keep_their_own_parameters
I="--sizes 4K --iters 1000 --warmup 100"
for r in 1 2 3; do
  for g in 0 1; do
    COLLECTIVES_CUDA_GRAPH_LAUNCH=$g p lr_g${g}_$r perf --op local_reduce --devices cuda:0 $I
    COLLECTIVES_CUDA_GRAPH_LAUNCH=$g p ch_g${g}_$r perf --op all_reduce --devices cuda:0,cpu:0 $I
    COLLECTIVES_CUDA_GRAPH_LAUNCH=$g COLLECTIVES_CUDA_DEVICES=0,0 p v2_g${g}_$r perf --op all_reduce --devices cuda:0,cuda:1 $I
  done
done
timeout 30 python3 $G/anchors.py --sizes 4K --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
t lib1 lib 120
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
