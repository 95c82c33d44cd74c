#!/bin/bash
# Run 36: a Vulkan result computed from CUDA inputs on one GPU is computed by CUDA and copied
# over (collective/star.rs `site`: the all_to_all's Vulkan join, a Vulkan leader's gather and
# reduce), against perf_old (80fec91, where the Vulkan device computed it after the CUDA copies
# and waited ~340 us for the GPU to switch APIs: run 35a's probe); the reduce_scatter of
# cpu:0,cuda:0 under Auto (the one-shot from 1 MiB, HOST_LED_REDUCE_SCATTER_IN_PLACE_MIN_BYTES)
# against perf_old's star; anchors.py in the same command; then the tests that cover it on the
# GPU: plans (the new a_vulkan_result_from_cuda_inputs_is_computed_by_cuda_on_one_gpu, and with
# two virtual CUDA devices), device_groups (every collective of the mixed groups, both orders,
# values against the f64 reference), joins, vulkan_collectives, the fault sweep; the library's
# test that the graph's question (the drivers' device lists, no device opened) agrees with the
# pair's decided bridge.
# Staged by: bash bench/gpu/stage.sh bench/gpu/36-cuda-computes-for-vulkan 80fec91 plans device_groups joins vulkan_collectives faults lib
# (as run: staged with "-" after 8583a14, 80fec91's perf_old from the first staging added).
# Invoked as: ROUNDS=1 timeout -k 5 150 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
# ROUNDS (default 2) perf rounds; with 1, the anchors at two sizes and no fault sweep, for a
# call with little device time left (as it ran: `ROUNDS=1`, inner timeout 150).
ROUNDS=${ROUNDS:-2}
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=4K,64K,1M,16M,256M
for r in $(seq $ROUNDS); do for b in perf_old perf; do
  for d in cuda:0,vulkan:0 vulkan:0,cuda:0; do
    p a2a_${d//[:,]/_}_${b}_$r $b --op all_to_all --devices $d --sizes $S --iters 10 --warmup 3
  done
  p vlead_${b}_$r $b --op gather,reduce --devices vulkan:0,cuda:0 --sizes $S --iters 10 --warmup 3
  p rs_cpu_0_cuda_0_${b}_$r $b --op reduce_scatter --devices cpu:0,cuda:0 --sizes $S --iters 10 --warmup 3
done; done
if [ $ROUNDS = 1 ]; then A=1M,256M; else A=1M,16M,256M; fi
timeout 60 python3 $G/anchors.py --sizes $A --iters 10 > $L/anchors.log 2>&1; tail -3 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t bridge lib 60 backend::staged::tests::validate_decides_the_bridge_of_a_present_pair --nocapture
t plans plans 40 --test-threads 2 --nocapture
COLLECTIVES_CUDA_DEVICES=0,0 t plans_2 plans 40 --test-threads 2
t groups device_groups 150 --test-threads 2
t joins joins 40 --test-threads 2
t vk_collectives vulkan_collectives 40
[ $ROUNDS = 1 ] || COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 150
grep -h -E "panicked|FAILED|skipped" $L/t_*.log | head -20
date
