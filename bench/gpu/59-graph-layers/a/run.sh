#!/bin/bash
# Run 59a: where a 4 KiB local_reduce's time goes with kernels launched through graphs (on by
# default since run 58): the layers probe (driver memset, raw launches, the backend's compute and
# wait, the library's call) with COLLECTIVES_CUDA_GRAPH_LAUNCH=0 and =1 in turn, twice; the graph
# probe once; issue 14's local_reduce row off and on, three rounds; its other 4 KiB rows with
# graphs on (the default), three rounds; host profiles (`perf --profile`, pprof) of the realized
# 4 KiB local_reduce and `cuda:0,cpu:0` all_reduce and of the local_reduce issued with 8 in
# flight, graphs on; anchors.
# Staged by: bash bench/gpu/stage.sh bench/gpu/59-graph-layers/a - lib, then perf built with
#   `--features profile` (not stripped) added to .gpu/bins.tar.xz as perf_prof
# Invoked as: timeout -k 5 150 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1
for r in 1 2; do
  for g in 0 1; do
    echo "layers, graphs $g, round $r"
    COLLECTIVES_CUDA_GRAPH_LAUNCH=$g timeout 60 $G/lib --ignored --nocapture --exact \
      backend::cuda::probe::local_reduce_layers_probe > $L/layers_g${g}_$r.log 2>&1
    grep -E "^probe|panicked" $L/layers_g${g}_$r.log
  done
done
timeout 60 $G/lib --ignored --nocapture --exact backend::cuda::probe::graph::graph_launch_probe \
  > $L/gprobe.log 2>&1; grep -E "^probe|panicked" $L/gprobe.log | head -10
I="--sizes 4K --iters 1000 --warmup 100"
for r in 1 2 3; do
  for g in 0 1; do
    COLLECTIVES_CUDA_GRAPH_LAUNCH=$g p lr_g${g}_$r perf --op local_reduce --devices cuda:0 $I
  done
done
for r in 1 2 3; do
  p ch_$r perf --op all_reduce --devices cuda:0,cpu:0 $I
  COLLECTIVES_CUDA_DEVICES=0,0 p v2_$r perf --op all_reduce --devices cuda:0,cuda:1 $I
  p c8_$r perf --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 $I
done
p prof_lr perf_prof --op local_reduce --devices cuda:0 --sizes 4K --iters 300000 --warmup 1000 --no-check --profile $L/prof_lr
p prof_ch perf_prof --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 200000 --warmup 1000 --no-check --profile $L/prof_ch
p prof_lri perf_prof --op local_reduce --devices cuda:0 --sizes 4K --iters 400000 --warmup 1000 --in-flight 8 --no-check --profile $L/prof_lri
head -40 $L/prof_lr/*.txt 2>/dev/null | cut -c1-150
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
