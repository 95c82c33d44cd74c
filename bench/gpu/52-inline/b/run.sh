#!/bin/bash
# Run 52b: run a's library rows were within the lease's spread (controls moved 1-2 us between
# rounds), so here the one-pass kernel and the whole 4 KiB all_reduce of `cuda:0,cpu:0` with the
# host input carried in the launch's parameters and read across the bus, alternated in one
# process (`backend::cuda::probe::mixed_all_reduce_layers_probe`, three rounds); the perf tool's
# rows of run a again, three rounds against 1cdc032 (perf_old); anchors; the carried test.
# Staged by: bash bench/gpu/stage.sh bench/gpu/52-inline/b 1cdc032 lib
# Invoked as: timeout -k 5 150 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t probe lib 60 --ignored --exact backend::cuda::probe::mixed_all_reduce_layers_probe --nocapture
grep -h "probe:" $L/t_probe.log
M="--sizes 256,4K,16K --iters 1000 --warmup 50" C3=cuda:0,cpu:0,cpu:1,cpu:2
for r in 1 2 3; do
  for b in perf_old perf; do
    p m_ch_${b}_$r $b --op all_reduce --devices cuda:0,cpu:0 $M
    p m_c3_${b}_$r $b --op all_reduce --devices $C3 $M
  done
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
REQUIRE_CUDA=1 t carried lib 60 carries --nocapture
date
