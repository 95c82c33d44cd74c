#!/bin/bash
# Run 51b: run a's rows again after the split fold became kernels of their own (`reducep_…`,
# `reduce<B>p_…`: in run a the split's code in the one reduce kernel cost every reduce registers,
# and the one-shot reduce_scatter lost 1.2-1.6 x from 16 MiB), against ede0228 (perf_old); the
# all_reduce's star (a fold writing every output whole) at 16 and 128 MiB, which must read even;
# issue 14's 4 KiB rows; anchors; the tests, `Auto` now taking the star reduce_scatter on two
# logical devices of one GPU.
# Staged by: bash bench/gpu/stage.sh bench/gpu/51-split-fold/b ede0228 lib plans cuda_native faults collective_props
# Invoked as: timeout -k 5 590 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
R="--op reduce_scatter --algo star,oneshot"
S="--sizes 4K,64K,1M --iters 300 --warmup 30"
B="--sizes 16M,128M --iters 10 --warmup 3"
I="--sizes 4K --iters 1000 --warmup 50"
V2=0,0 V4=0,0,0,0 V8=0,0,0,0,0,0,0,0
D2=cuda:0,cuda:1 D4=cuda:0,cuda:1,cuda:2,cuda:3 D8=cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7
for r in 1 2 3; do
  for b in perf_old perf; do
    COLLECTIVES_CUDA_DEVICES=$V2 p s_v2_${b}_$r $b --devices $D2 $R $S
    COLLECTIVES_CUDA_DEVICES=$V4 p s_v4_${b}_$r $b --devices $D4 $R $S
    COLLECTIVES_CUDA_DEVICES=$V8 p s_v8_${b}_$r $b --devices $D8 $R $S
  done
done
for r in 1 2; do
  for b in perf_old perf; do
    COLLECTIVES_CUDA_DEVICES=$V2 p l_v2_${b}_$r $b --devices $D2 $R $B
    COLLECTIVES_CUDA_DEVICES=$V4 p l_v4_${b}_$r $b --devices $D4 $R $B
    COLLECTIVES_CUDA_DEVICES=$V8 p l_v8_${b}_$r $b --devices $D8 $R $B
    COLLECTIVES_CUDA_DEVICES=$V2 p a_v2_${b}_$r $b --devices $D2 --op all_reduce $B
    p i_lr_${b}_$r $b --op local_reduce --devices cuda:0 $I
    p i_ch_${b}_$r $b --op all_reduce --devices cuda:0,cpu:0 $I
    COLLECTIVES_CUDA_DEVICES=$V2 p i_v2_${b}_$r $b --op all_reduce,reduce_scatter --devices $D2 $I
  done
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t fold lib 200 launch::fold
COLLECTIVES_CUDA_DEVICES=$V2 t lib2 lib 100
COLLECTIVES_CUDA_DEVICES=$V2 t plans2 plans 30
COLLECTIVES_CUDA_DEVICES=$V2 t native2 cuda_native 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0 t native3 cuda_native 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=$V2 t faults2 faults 70 --show-output
grep -h "^total:" $L/t_faults2.log
t props collective_props 40
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
