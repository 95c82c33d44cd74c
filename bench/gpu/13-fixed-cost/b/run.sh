#!/bin/bash
# GPU run 13b (one H200, its host's 16 cores): the staged-chain test fixed for the bridge; CUDA
# fixed costs at 4 KiB before (perf_base: main 02664b0) and after (perf: this change, pooled
# CUDA events), five interleaved rounds; CPU all_reduce on cpu:0..3 before (perf_old: df0f592)
# and after, star and ring, five interleaved rounds (issue 13's 3 % bound).
# Invoked as: timeout -k 5 570 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; uptime
timeout 120 $G/cuda_copies > $L/t_cuda_copies.log 2>&1; echo "cuda_copies rc=$?"; grep -E "^test result|panicked|->" $L/t_cuda_copies.log
p() { # tag binary args...: one perf invocation, its rows in the summary
  local tag=$1 bin=$2; shift 2
  timeout 120 $G/$bin "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log
}
for r in 1 2 3 4 5; do
  for b in perf_base perf; do
    COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_v2_$r $b --op all_reduce --devices cuda:0,cuda:1 --algo star --sizes 4K --iters 300 --warmup 30
    COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_lr_$r $b --op local_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 300 --warmup 30
    p ${b}_cc_$r $b --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 300 --warmup 30
  done
done
C4=cpu:0,cpu:1,cpu:2,cpu:3
for r in 1 2 3 4 5; do
  for b in perf_old perf; do
    for a in star ring; do
      p ${b}_cpu4_${a}_$r $b --op all_reduce --algo $a --devices $C4 --sizes 4K,64K,1M,16M,64M --iters 60 --warmup 10
    done
  done
done
