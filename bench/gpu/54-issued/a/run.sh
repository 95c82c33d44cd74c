#!/bin/bash
# Run 54a: `collectives::issue` (calls issued without waiting, up to N in flight). The new
# `issued` test on the GPU (chains of all_reduces issued before the last is done, on host, Vulkan,
# two virtual CUDA devices and mixed groups); issue 14's 4 KiB rows, three interleaved rounds:
# 8287f18 (perf_old, before `issue`) and 16962f6 (perf) each realizing and waiting for every
# call, and 16962f6 issuing with 1 and 8 calls in flight (`--in-flight`, the loop's mean per
# call); PyTorch's add the same two ways (torch_issued.py); anchors. The test binaries are
# c4105e5's (16962f6 changes the perf tool and the CHANGELOG only).
# Staged by: bash bench/gpu/stage.sh bench/gpu/54-issued/a 8287f18 lib issued faults cuda_native device_groups cuda_ops cuda_copies cuda_faults joins collective_moves typed vulkan_collectives plans first_hour, with
#   a/torch_issued.py copied to .gpu/; then 16962f6's release perf (stripped) put in
#   .gpu/bins.tar.xz in place of c4105e5's
# Invoked as: timeout -k 5 240 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
REQUIRE_CUDA=1 REQUIRE_VULKAN=1 COLLECTIVES_CUDA_DEVICES=0,0 t issued2 issued 120 --nocapture
I="--sizes 4K --iters 1000 --warmup 100"
D2=cuda:0,cuda:1 C8=cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7
for r in 1 2 3; do
  for v in old:perf_old:0 new:perf:0 f1:perf:1 f8:perf:8; do
    IFS=: read tag b f <<< "$v"
    F="--in-flight $f"; [ $b = perf_old ] && F=""  # perf_old has no --in-flight
    p lr_${tag}_$r $b --op local_reduce --devices cuda:0 $I $F
    p ch_${tag}_$r $b --op all_reduce --devices cuda:0,cpu:0 $I $F
    COLLECTIVES_CUDA_DEVICES=0,0 p v2_${tag}_$r $b --op all_reduce --devices $D2 $I $F
    p c8_${tag}_$r $b --op all_reduce --devices $C8 $I $F
  done
done
timeout 90 python3 $G/torch_issued.py > $L/torch_issued.log 2>&1; grep -h -E "torch:|Error" $L/torch_issued.log
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
