#!/bin/bash
# Run 50f: the tree as submitted against 5335161 (perf_old), three rounds: two virtual CUDA
# devices' all_gather, reduce_scatter and broadcast under `Auto` (now the star), the all_to_all of
# three and four members with one CUDA device (now fanned out), the pairs' all_to_all, issue 14's
# 4 KiB rows; anchors; the tests the choice touches, on two virtual devices where they take them.
# Staged by: bash bench/gpu/stage.sh bench/gpu/50-all-to-all/f 5335161 lib plans device_groups cuda_native collective_props typed faults joins
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O="--op all_gather,reduce_scatter,broadcast --devices cuda:0,cuda:1"
A="--op all_to_all --sizes 4K,64K --iters 500 --warmup 50"
I="--sizes 4K --iters 1000 --warmup 50"
for r in 1 2 3; do
  for b in perf_old perf; do
    COLLECTIVES_CUDA_DEVICES=0,0 p v2_${b}_$r $b $O --sizes 4K,64K,1M,4M --iters 200 --warmup 20
    for g in c3:cuda:0,cpu:0,cpu:1 c4:cuda:0,cpu:0,cpu:1,cpu:2 h4:cpu:0,cpu:1,cpu:2,cuda:0 ch:cuda:0,cpu:0 vc:vulkan:0,cuda:0; do
      tag=${g%%:*}; dev=${g#*:}
      p a_${tag}_${b}_$r $b --devices $dev $A
    done
    p i_lr_${b}_$r $b --op local_reduce --devices cuda:0 $I
    p i_ch_${b}_$r $b --op all_reduce --devices cuda:0,cpu:0 $I
    COLLECTIVES_CUDA_DEVICES=0,0 p i_v2_${b}_$r $b --op all_reduce --devices cuda:0,cuda:1 $I
    p i_h8_${b}_$r $b --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 $I
  done
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t plans plans 30
COLLECTIVES_CUDA_DEVICES=0,0 t plans2 plans 30
COLLECTIVES_CUDA_DEVICES=0,0 t lib2 lib 100
COLLECTIVES_CUDA_DEVICES=0,0 t native2 cuda_native 60
t props collective_props 40
t typed typed 30
t joins joins 40
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 70 --show-output
grep -h "^total:" $L/t_faults2.log
t groups device_groups 130 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
