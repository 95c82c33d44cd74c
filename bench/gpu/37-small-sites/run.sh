#!/bin/bash
# Run 37: what run 36 could not run. daacc62 (collective/star.rs `site` computes a Vulkan-bound
# result on the CUDA device of its GPU only from DEVICE_MIN_BYTES, 256 KiB) against perf_old
# (80fec91, before `site`) at the small sizes and around the threshold, two interleaved rounds,
# with the one-shot all_reduce of the pair (8f57d9d: the Vulkan member takes the CUDA member's
# fold from 256 KiB) beside the star;
# every collective of cuda:0,vulkan:0 at 4 KiB with the step log (where a small mixed call's
# time goes), and four of cuda:0,cpu:0; issue 14's 4 KiB rows, two rounds; anchors.py in the same command; then the tests
# run 36 left out or ran before daacc62: the library's bridge test, plans (its small-result case
# of a_vulkan_result_from_cuda_inputs_is_computed_by_cuda_on_one_gpu), plans on two virtual CUDA
# devices, device_groups, joins, vulkan_collectives, the fault sweep on two virtual CUDA devices.
# Staged by: bash bench/gpu/stage.sh bench/gpu/37-small-sites 80fec91 plans device_groups joins vulkan_collectives faults lib
# (as run: staged so at fda0287, then again with "-" at e466c4c, 80fec91's perf_old from the
# first staging added to bins.tar.xz).
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
S=4K,64K,128K,256K,1M,16M
for r in 1 2; do for b in perf_old perf; do
  for d in cuda:0,vulkan:0 vulkan:0,cuda:0; do
    p a2a_${d//[:,]/_}_${b}_$r $b --op all_to_all --devices $d --sizes $S --iters 20 --warmup 3
  done
  p vlead_${b}_$r $b --op gather,reduce,all_gather,reduce_scatter --devices vulkan:0,cuda:0 --sizes $S --iters 20 --warmup 3
  for d in cuda:0,vulkan:0 vulkan:0,cuda:0; do
    p ar_${d//[:,]/_}_${b}_$r $b --op all_reduce --algo star,oneshot --devices $d --sizes $S --iters 20 --warmup 3
  done
done; done
COLLECTIVES_LOG=debug p steps4k perf --op all_reduce,all_gather,reduce_scatter,broadcast,reduce,gather,scatter,all_to_all --devices cuda:0,vulkan:0 --sizes 4K --iters 20 --warmup 3
COLLECTIVES_LOG=debug p steps4k_host perf --op all_reduce,all_gather,reduce_scatter,all_to_all --devices cuda:0,cpu:0 --sizes 4K --iters 20 --warmup 3
C8=cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7
for r in 1 2; do
  p lr_$r perf --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
  p ch_$r perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
  COLLECTIVES_CUDA_DEVICES=0,0 p cc_$r perf --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 2000 --warmup 100
  p c8_$r perf --op all_reduce --devices $C8 --sizes 4K --iters 2000 --warmup 100
done
timeout 60 python3 $G/anchors.py --sizes 4K,1M,16M --iters 10 > $L/anchors.log 2>&1; tail -3 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t bridge lib 60 backend::staged::tests::validate_decides_the_bridge_of_a_present_pair --nocapture
t plans plans 40 --test-threads 2 --nocapture
COLLECTIVES_CUDA_DEVICES=0,0 t plans_2 plans 40 --test-threads 2
t groups device_groups 150 --test-threads 2
t joins joins 40 --test-threads 2
t vk_collectives vulkan_collectives 40
COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 150
grep -h -E "panicked|FAILED|skipped" $L/t_*.log | head -20
date
