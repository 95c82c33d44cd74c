#!/bin/bash
# Run 47a (trial): the small collectives of a CUDA device and a Vulkan device with no host member,
# staged through the host (`cpu:0`, which is no member) as one host call, against the graph. The
# trial build stages every collective with a host call of such a group below
# `HOST_STAGED_BELOW_BYTES` when COLLECTIVES_TRIAL_NOHOST is set, and none when it is not (then
# it is main at 3874c8d), so one binary gives both sides. Perf first, then tests (`device_groups`' small staged
# tests with the pair groups added, both ways, and on two virtual CUDA devices; the fault sweep
# with its new `cuda+vulkan, small` group, staged). Perf: three rounds, the order alternating, every collective with a host call of `cuda:0,vulkan:0` and
# `vulkan:0,cuda:0` at 4, 16, 32, 64 and 96 KiB, and of `cuda:0,cuda:1,vulkan:0` (virtual) at
# 4 and 64 KiB; issue 14's 4 KiB rows; anchors.
# Staged by: bash bench/gpu/stage.sh bench/gpu/47-vulkan-pair/a - device_groups vulkan_collectives plans faults (the trial tree, with the fault sweep's new `cuda+vulkan, small` group, on 3874c8d)
# Invoked as: timeout -k 5 420 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nproc
OPS=all_reduce,all_gather,reduce_scatter,broadcast,scatter,all_to_all
for r in 1 2 3; do
  order="x o"; [ $((r % 2)) = 0 ] && order="o x"
  for v in $order; do
    k=; [ $v = x ] && k=1
    for D in cuda:0,vulkan:0 vulkan:0,cuda:0; do
      COLLECTIVES_TRIAL_NOHOST=$k p g_${D//[:,]/}_perf_${v}_${r} perf --op $OPS --devices $D --sizes 4K,16K,32K,64K,96K --iters 200 --warmup 20
    done
    COLLECTIVES_TRIAL_NOHOST=$k COLLECTIVES_CUDA_DEVICES=0,0 p g_ccv_perf_${v}_${r} perf --op $OPS --devices cuda:0,cuda:1,vulkan:0 --sizes 4K,64K --iters 200 --warmup 20
  done
done
for r in 1 2; do
  p lr_perf_${r} perf --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
  p ar_perf_${r} perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t groups device_groups 120 small_ --test-threads 2
COLLECTIVES_TRIAL_NOHOST=1 t groups_x device_groups 120 small_ --test-threads 2
COLLECTIVES_TRIAL_NOHOST=1 COLLECTIVES_CUDA_DEVICES=0,0 t groups2_x device_groups 120 small_ --nocapture
COLLECTIVES_TRIAL_NOHOST=1 t vkcoll_x vulkan_collectives 60 --test-threads 2
COLLECTIVES_TRIAL_NOHOST=1 t faults_x faults 120 --nocapture
grep -h -E "^total:|cuda\+vulkan" $L/t_faults_x.log | head -5
grep -h -E "panicked|FAILED|minimal failing" $L/t_*.log | head -20
unset REQUIRE_CUDA REQUIRE_VULKAN
date
