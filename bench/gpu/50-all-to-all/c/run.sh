#!/bin/bash
# Run 50c: the tree as committed (the segment copy kernel striding over every segment's units as
# one run; a concat of several rows placed in one launch; the all_to_all of a CUDA device and a
# host or Vulkan device alone fanned out) against 5335161 (perf_old), three rounds: the pairs'
# all_to_all, the calls that copy segments (virtual CUDA devices, small and large), issue 14's
# 4 KiB rows; anchors; every test binary the change touches, the fault sweep.
# Staged by: bash bench/gpu/stage.sh bench/gpu/50-all-to-all/c 5335161 lib plans collective_props collective_moves typed device_groups cuda_native cuda_ops joins cuda_copies cuda_faults faults vulkan_collectives
# Invoked as: timeout -k 5 590 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
A="--op all_to_all --sizes 4K,16K,64K,96K --iters 500 --warmup 50"
S="--sizes 4K,64K,1M --iters 300 --warmup 30"
B="--sizes 16M,256M --iters 10 --warmup 3"
I="--sizes 4K --iters 1000 --warmup 50"
for r in 1 2 3; do
  for b in perf_old perf; do
    for g in ch:cuda:0,cpu:0 hc:cpu:0,cuda:0 cv:cuda:0,vulkan:0 vc:vulkan:0,cuda:0 c3:cuda:0,cpu:0,cpu:1,cpu:2; do
      tag=${g%%:*}; dev=${g#*:}
      p c_${tag}_${b}_$r $b --devices $dev $A
    done
    p s_ch_${b}_$r $b --op all_gather --devices cuda:0,cpu:0 $S
    COLLECTIVES_CUDA_DEVICES=0,0 p s_v2_${b}_$r $b --op all_gather,all_to_all,reduce_scatter --devices cuda:0,cuda:1 $S
    COLLECTIVES_CUDA_DEVICES=0,0,0,0 p s_v4_${b}_$r $b --op all_gather,all_to_all,scatter --devices cuda:0,cuda:1,cuda:2,cuda:3 $S
    p i_lr_${b}_$r $b --op local_reduce --devices cuda:0 $I
    p i_ch_${b}_$r $b --op all_reduce --devices cuda:0,cpu:0 $I
    COLLECTIVES_CUDA_DEVICES=0,0 p i_v2_${b}_$r $b --op all_reduce --devices cuda:0,cuda:1 $I
    p i_h8_${b}_$r $b --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 $I
  done
done
for r in 1 2; do
  for b in perf_old perf; do
    COLLECTIVES_CUDA_DEVICES=0,0,0,0 p l_v4_${b}_$r $b --op all_gather,all_to_all,scatter --devices cuda:0,cuda:1,cuda:2,cuda:3 $B
  done
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t lib lib 100
t plans plans 30
t cuda_ops cuda_ops 40
t cuda_copies cuda_copies 40
t cfaults cuda_faults 40
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native8 cuda_native 90 --test-threads 2
t joins joins 40
t props collective_props 40
t moves collective_moves 30
t typed typed 30
t vcoll vulkan_collectives 60
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 70 --show-output
grep -h "^total:" $L/t_faults2.log
t groups device_groups 130 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
