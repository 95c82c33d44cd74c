#!/bin/bash
# Run 48e: a contiguous part of a Vulkan tensor in device memory (a shard of 256 KiB or more cut
# into smaller parts) crosses to CUDA by the device bridge, read in place, and the Vulkan
# member's join or fold over it is CUDA's (d3d4ce9): this build (`perf`) against 660365d
# (`perf_old`), two rounds, the order alternating — the all_to_all and the one-shot
# reduce_scatter of cuda:0,vulkan:0 and vulkan:0,cuda:0 at 128 KiB (unchanged: the shard in host
# memory), 256, 384 and 512 KiB (parts of 256 KiB: bridged before too); anchors. Then the tests.
# Staged by: bash bench/gpu/stage.sh bench/gpu/48-host-time/e 660365d plans typed joins device_groups vulkan_collectives faults (at d3d4ce9)
# Invoked as: timeout -k 5 420 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
A="--iters 50 --warmup 5"
rows() { local b=$1 r=$2
  for D in cuda:0,vulkan:0 vulkan:0,cuda:0; do
    p g_${D//[:,]/}A_${b}_$r $b --op all_to_all --devices $D --sizes 128K,256K,384K,512K $A
    p g_${D//[:,]/}O_${b}_$r $b --op reduce_scatter --algo oneshot --devices $D --sizes 128K,256K,384K,512K $A
  done
}
for r in 1 2; do
  if [ $((r % 2)) = 1 ]; then rows perf_old $r; rows perf $r; else rows perf $r; rows perf_old $r; fi
done
timeout 40 python3 $G/anchors.py --sizes 1M --iters 10 > $L/anchors.log 2>&1; tail -1 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t parts device_groups 100 parts_of --nocapture
t plans plans 40
t vcoll vulkan_collectives 60
t typed typed 40
t joins joins 40 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 90 --show-output
grep -h "^total:" $L/t_faults2.log
t groups device_groups 150 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
