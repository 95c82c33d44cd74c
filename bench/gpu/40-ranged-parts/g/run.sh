#!/bin/bash
# Run 40g (7f47041): a small all_to_all of one CUDA device and host devices runs through the CUDA
# device (`star::exchange_hub`, `EXCHANGE_THROUGH_CUDA_BELOW_BYTES`): one concat there, each
# member's output a range of it. The GPU tests of mixed collectives (the new values test in
# `joins`); then this build (`perf`) against run f's (e16649d, `perf_f`): the all_to_all of
# `cuda:0,cpu:0` and of `cuda:0,cpu:0,cpu:1,cpu:2`, four rounds, the order alternating; a step
# log; the anchors.
# Staged by: bash bench/gpu/stage.sh bench/gpu/40-ranged-parts/g e16649d joins collective_props device_groups plans typed first_hour
#   then perf_old renamed perf_f in bins.tar.xz.
# Invoked as: timeout -k 5 330 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t joins joins 60 --test-threads 2
t props collective_props 120 --test-threads 2 --nocapture
t groups device_groups 150 --test-threads 2
for b in plans typed first_hour; do t $b $b 60 --test-threads 2; done
grep -h -E "panicked|FAILED|skipped|minimal failing" $L/t_*.log | head -20
grep -h -E "^test a_cuda_and_host_all_to_all" $L/t_joins.log
unset REQUIRE_CUDA REQUIRE_VULKAN
for r in 1 2 3 4; do
  order="perf perf_f"; [ $((r % 2)) = 0 ] && order="perf_f perf"
  for b in $order; do
    for d in cuda:0,cpu:0 cuda:0,cpu:0,cpu:1,cpu:2; do
      p a_${b}_${r}_${d//[:,]/_} $b --op all_to_all --devices $d --sizes 4K,64K,128K,256K --iters 300 --warmup 30
    done
  done
done
COLLECTIVES_LOG=debug p steps perf --op all_to_all --devices cuda:0,cpu:0,cpu:1,cpu:2 --sizes 4K --iters 5 --warmup 2
grep -A12 "realize steps" $L/steps.log | tail -13
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
