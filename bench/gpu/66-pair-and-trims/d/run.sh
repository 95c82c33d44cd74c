#!/bin/bash
# Run 66d: run c found a process's level below the library (the driver's memset and synchronize
# 6.1-6.3 us in some processes, 6.7-6.9 in others, every layer above moving with it). Is it the
# stream's, the context's, or the process's? The levels probe (backend/cuda/probe/levels.rs) in
# sixteen processes one after another: the same 4 KiB memset and its wait, in turn, on the compute
# stream (synchronized; cuStreamQuery until done), four new streams, one of the greatest priority,
# and a stream of each of three new contexts (two CU_CTX_SCHED_AUTO, one CU_CTX_SCHED_SPIN); last,
# a 4 KiB device-to-device copy on the compute stream. If rows of one process read both levels,
# the level is theirs, not the process's. Then issue 14's
# 4 KiB rows once each, and a local_reduce of one shard on cuda:0 (now a device copy: perf) against
# the tree before (the reduce kernel: perf_old), with the reduce of two shards beside it (the
# kernel in both), three rounds in turn, the anchors, and the native collectives on 2, 3, 4 and 8 virtual devices
# and the fault tests on this tree (on whichever card comes: issue 14 asks for an H200).
# Staged by: bash bench/gpu/stage.sh bench/gpu/66-pair-and-trims/d 33299ca lib cuda_native cuda_faults
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader
export REQUIRE_CUDA=1
echo "process: compute sync, compute query, new streams 1-4, greatest priority, contexts 1-3, copy (medians, us)"
for i in $(seq 1 16); do
  timeout 60 $G/lib --ignored --nocapture --exact backend::cuda::probe::levels::stream_levels_probe \
    > $L/levels_$i.log 2>&1
  echo "$i: $(grep -E '^probe' $L/levels_$i.log | awk '{printf "%s ", $2}')$(grep -c panicked $L/levels_$i.log) panics"
done
grep -h "^probe" $L/levels_1.log
grep -h -A3 panicked $L/levels_*.log | head -8
I="--sizes 4K --iters 1000 --warmup 100"
p lr perf --op local_reduce --devices cuda:0 $I
COLLECTIVES_CUDA_DEVICES=0,0 p v2 perf --op all_reduce --devices cuda:0,cuda:1 $I
p ch perf --op all_reduce --devices cuda:0,cpu:0 $I
p c8 perf --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 $I
for r in 1 2 3; do
  for b in perf_old perf; do
    p ${b}_lr_$r $b --op local_reduce --devices cuda:0 $I
    COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_lr2_$r $b --op local_reduce --devices cuda:0,cuda:1 $I
  done
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
for n in 0,0 0,0,0 0,0,0,0 0,0,0,0,0,0,0,0; do
  COLLECTIVES_CUDA_DEVICES=$n t native$(( (${#n} + 1) / 2 )) cuda_native 90 --test-threads 2
done
t faults cuda_faults 60
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
