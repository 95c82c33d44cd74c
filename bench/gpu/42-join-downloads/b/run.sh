#!/bin/bash
# Run 42b (0bf3b66): a host join's small downloads from one
# CUDA device are one `copyseg` launch (`backend/cuda/join.rs`). The GPU tests of joins (on two
# virtual CUDA devices too, so one join downloads from two devices, two parts from one), `lib`,
# `collective_props`, `device_groups`, the fault sweep; then this build (`perf`) against b810f89
# (`perf_old`, run 42a's): the all_to_all and gather of CUDA and host devices (a host leader's
# gather downloads the CUDA shard into its join), four rounds, the order alternating; a step
# log; the anchors.
# Staged by: bash bench/gpu/stage.sh bench/gpu/42-join-downloads/b b810f89 lib collective_props device_groups joins faults
# Invoked as: timeout -k 5 500 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t joins joins 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t joins2 joins 90 --test-threads 2
t lib lib 150 --test-threads 2
t props collective_props 120 --test-threads 2
t groups device_groups 150 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 90 --nocapture
grep -h -E "^total:" $L/t_faults.log
grep -h -E "panicked|FAILED|skipped|minimal failing" $L/t_*.log | head -20
unset REQUIRE_CUDA REQUIRE_VULKAN
COLLECTIVES_LOG=debug p steps2 perf --op all_to_all --devices cuda:0,cpu:0 --sizes 4K --iters 10 --warmup 3
grep -A8 "realize steps" $L/steps2.log | tail -9
for r in 1 2 3 4; do
  order="perf perf_old"; [ $((r % 2)) = 0 ] && order="perf_old perf"
  for b in $order; do
    for d in cuda:0,cpu:0 cuda:0,cpu:0,cpu:1,cpu:2 cpu:0,cuda:0; do
      p x_${b}_${r}_${d//[:,]/_} $b --op all_to_all,gather --devices $d --sizes 4K,64K,256K,1M --iters 300 --warmup 20
    done
  done
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
