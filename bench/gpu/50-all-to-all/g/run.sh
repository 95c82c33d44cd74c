#!/bin/bash
# Run 50g: the tree as submitted (the reduce_scatter of two virtual devices back on the one-shot):
# two virtual CUDA devices' all_gather, reduce_scatter and broadcast under `Auto` against 5335161
# (perf_old), two rounds; anchors; cuda_native and plans on two virtual devices.
# Staged by: bash bench/gpu/stage.sh bench/gpu/50-all-to-all/g 5335161 plans cuda_native
# Invoked as: timeout -k 5 200 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
O="--op all_gather,reduce_scatter,broadcast --devices cuda:0,cuda:1 --sizes 4K,64K,4M --iters 200 --warmup 20"
for r in 1 2; do
  for b in perf_old perf; do
    COLLECTIVES_CUDA_DEVICES=0,0 p v2_${b}_$r $b $O
  done
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
COLLECTIVES_CUDA_DEVICES=0,0 t plans2 plans 30
COLLECTIVES_CUDA_DEVICES=0,0 t native2 cuda_native 60
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
