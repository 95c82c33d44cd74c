#!/bin/bash
# Run 50b: the segment copy kernel loading a batch of up to eight segments before storing any
# (a thread waited out one bus round trip per segment in host memory) and a concat of several
# rows placed in one launch; the small all_to_all fanned out (COLLECTIVES_TRIAL_A2A=1, perf_x)
# and not (perf) against 5335161 (perf_old), three rounds; the other calls that copy segments
# (all_gather, all_to_all, scatter, reduce_scatter of virtual CUDA devices, small and large)
# against 5335161; anchors; every test binary the kernel touches.
# Staged by: bash bench/gpu/stage.sh bench/gpu/50-all-to-all/b 5335161 lib plans collective_props collective_moves typed device_groups cuda_native cuda_ops joins cuda_copies
# Invoked as: timeout -k 5 580 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
A="--op all_to_all --sizes 4K,16K,64K,96K --iters 500 --warmup 50"
S="--sizes 4K,64K,1M --iters 300 --warmup 30"
B="--sizes 16M,256M --iters 10 --warmup 3"
for r in 1 2 3; do
  for g in ch:cuda:0,cpu:0 hc:cpu:0,cuda:0 cv:cuda:0,vulkan:0 vc:vulkan:0,cuda:0 c3:cuda:0,cpu:0,cpu:1,cpu:2; do
    tag=${g%%:*}; dev=${g#*:}
    p b_${tag}_perf_old_$r perf_old --devices $dev $A
    p b_${tag}_perf_$r perf --devices $dev $A
    COLLECTIVES_TRIAL_A2A=1 p b_${tag}_perf_x_$r perf --devices $dev $A
  done
  for b in perf_old perf; do
    p s_ch_${b}_$r $b --op all_gather --devices cuda:0,cpu:0 $S
    COLLECTIVES_CUDA_DEVICES=0,0 p s_v2_${b}_$r $b --op all_gather,all_to_all,reduce_scatter --devices cuda:0,cuda:1 $S
    COLLECTIVES_CUDA_DEVICES=0,0,0,0 p s_v4_${b}_$r $b --op all_gather,all_to_all,scatter --devices cuda:0,cuda:1,cuda:2,cuda:3 $S
  done
done
for r in 1 2; do
  for b in perf_old perf; do
    COLLECTIVES_CUDA_DEVICES=0,0,0,0 p l_v4_${b}_$r $b --op all_gather,all_to_all,scatter --devices cuda:0,cuda:1,cuda:2,cuda:3 $B
  done
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t lib lib 120
t plans plans 30
t cuda_ops cuda_ops 60
t cuda_copies cuda_copies 60
COLLECTIVES_CUDA_DEVICES=0,0,0,0 t native4 cuda_native 90
t joins joins 60
COLLECTIVES_TRIAL_A2A=1 t props_x collective_props 60
COLLECTIVES_TRIAL_A2A=1 t moves_x collective_moves 60
COLLECTIVES_TRIAL_A2A=1 t typed_x typed 40
t groups device_groups 130 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
