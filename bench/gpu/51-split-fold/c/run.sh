#!/bin/bash
# Run 51c: the split fold's two ways of reaching its output, interleaved, two rounds, the order
# flipped each round: perf = 8aefa7d (the output's pointer selected, then one store), perf_old =
# 48517f2 (8aefa7d with `trial.diff`: a store predicated per output, as in run a); the star
# reduce_scatter of 2, 4 and 8 virtual devices 4 KiB to 4 MiB per shard;
# anchors; cuda_native on 4 and 8 devices, on 8aefa7d. Cut down after leases failed to start
# seven times (the binaries staged for more tests are unused; run b ran them on this code).
# Staged by: bash bench/gpu/stage.sh bench/gpu/51-split-fold/c 48517f2 lib plans cuda_native faults collective_props collective_moves typed joins cuda_ops device_groups vulkan_collectives
# Invoked as: timeout -k 5 150 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
R="--op reduce_scatter --algo star --sizes 4K,64K,1M,4M --iters 300 --warmup 30"
V2=0,0 V4=0,0,0,0 V8=0,0,0,0,0,0,0,0
D2=cuda:0,cuda:1 D4=cuda:0,cuda:1,cuda:2,cuda:3 D8=cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7
for r in 1 2; do
  order="perf_old perf"; [ $((r % 2)) = 0 ] && order="perf perf_old"
  for b in $order; do
    COLLECTIVES_CUDA_DEVICES=$V2 p s_v2_${b}_$r $b --devices $D2 $R
    COLLECTIVES_CUDA_DEVICES=$V4 p s_v4_${b}_$r $b --devices $D4 $R
    COLLECTIVES_CUDA_DEVICES=$V8 p s_v8_${b}_$r $b --devices $D8 $R
  done
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
COLLECTIVES_CUDA_DEVICES=$V4 t native4 cuda_native 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=$V8 t native8 cuda_native 70 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
