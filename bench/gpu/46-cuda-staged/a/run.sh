#!/bin/bash
# Run 46a: a trial — the small collectives of groups with a CUDA member and a host member staged
# through the host member as one host call, as those of host and Vulkan devices are (below
# `HOST_STAGED_BELOW_BYTES` = 128 KiB a shard, where the star runs; all six collectives with a
# host call). Tests of this tree (the new `small_collectives_of_cuda_and_host_devices` in
# `device_groups`, every other test of that binary, `vulkan_collectives`, `typed`,
# `collective_props`, the fault sweep on two virtual CUDA devices, `lib`); then perf, this build
# (`perf`) against main before it (`perf_old` = 2bf872b), three rounds, the order alternating:
# every such collective of five groups at 4, 64 and 96 KiB (staged in the trial) and 128 KiB
# (the graph in both), `local_reduce` on `cuda:0` (two shards, `--devices cuda:0,cpu:0`, as run 40) at 4 KiB; anchors; `lib` last.
# Staged by: bash bench/gpu/stage.sh bench/gpu/46-cuda-staged/a 2bf872b device_groups vulkan_collectives typed collective_props faults lib (the working tree: 2bf872b with the trial's change to `runs_on_host` and the tests)
# Invoked as: timeout -k 5 480 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nproc
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t groups device_groups 200 --test-threads 2
t vkcoll vulkan_collectives 60 --test-threads 2
t typed typed 60 --test-threads 2
t props collective_props 100 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 90 --nocapture
grep -h -E "^total:" $L/t_faults.log
grep -h -E "panicked|FAILED|minimal failing" $L/t_*.log | head -20
unset REQUIRE_CUDA REQUIRE_VULKAN
OPS=all_reduce,all_gather,reduce_scatter,broadcast,scatter,all_to_all
SZ=4K,64K,96K,128K
for r in 1 2 3; do
  order="perf perf_old"; [ $((r % 2)) = 0 ] && order="perf_old perf"
  for b in $order; do
    p c2_${b}_${r} $b --op $OPS --devices cuda:0,cpu:0 --sizes $SZ --iters 200 --warmup 20
    p h2_${b}_${r} $b --op $OPS --devices cpu:0,cuda:0 --sizes $SZ --iters 200 --warmup 20
    p c4_${b}_${r} $b --op $OPS --devices cuda:0,cpu:0,cpu:1,cpu:2 --sizes $SZ --iters 200 --warmup 20
    p h4_${b}_${r} $b --op $OPS --devices cpu:0,cpu:1,cpu:2,cuda:0 --sizes $SZ --iters 200 --warmup 20
    p cv_${b}_${r} $b --op $OPS --devices cuda:0,vulkan:0,cpu:0 --sizes $SZ --iters 200 --warmup 20
    p lr_${b}_${r} $b --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
  done
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t lib lib 120 --test-threads 2
date
