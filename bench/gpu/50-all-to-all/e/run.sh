#!/bin/bash
# Run 50e: on two virtual CUDA devices of one GPU, the star all_gather, reduce_scatter and
# broadcast (one call of the leader) against the one-shot `Auto` takes there (the perf tool's
# --algo, one binary), three rounds, 4 KiB to 16 MiB; the all_to_all of three and four members
# with one CUDA device fanned out (COLLECTIVES_TRIAL_A2A3=1, perf_x) against staged (perf) now
# that the segment copy kernel copies its segments side by side, three rounds; anchors.
# Staged by: bash bench/gpu/stage.sh bench/gpu/50-all-to-all/e - plans
# Invoked as: timeout -k 5 300 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O="--op all_gather,reduce_scatter,broadcast --devices cuda:0,cuda:1"
A="--op all_to_all --sizes 4K,16K,64K --iters 500 --warmup 50"
for r in 1 2 3; do
  for algo in oneshot star; do
    COLLECTIVES_CUDA_DEVICES=0,0 p v2_${algo}_perf_$r perf $O --algo $algo --sizes 4K,64K,1M --iters 300 --warmup 30
    COLLECTIVES_CUDA_DEVICES=0,0 p w2_${algo}_perf_$r perf $O --algo $algo --sizes 4M,16M --iters 30 --warmup 5
  done
  for g in c3:cuda:0,cpu:0,cpu:1 c4:cuda:0,cpu:0,cpu:1,cpu:2 h4:cpu:0,cpu:1,cpu:2,cuda:0; do
    tag=${g%%:*}; dev=${g#*:}
    p a_${tag}_perf_$r perf --devices $dev $A
    COLLECTIVES_TRIAL_A2A3=1 p a_${tag}_perf_x_$r perf --devices $dev $A
  done
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
t plans plans 30
date
