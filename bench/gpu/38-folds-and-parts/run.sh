#!/bin/bash
# Run 38: `site` after run 37 (collective/star.rs): a fold bound for a Vulkan device sharing its
# GPU with a CUDA device is computed by the CUDA device at every size (daacc62 had kept folds
# under 256 KiB on the Vulkan device), and nothing is moved to the CUDA device whose Vulkan
# input is a part under 256 KiB of a tensor in device memory (run 37: the all_to_all of
# cuda:0,vulkan:0 at 256 KiB 695-764 us computed by CUDA, 360-420 by Vulkan). perf_37 is run
# 37's perf (e466c4c), perf this tree, two interleaved rounds; anchors.py in the same command;
# then plans (the small-fold and part cases of
# a_vulkan_result_from_cuda_inputs_is_computed_by_cuda_on_one_gpu) and device_groups (every
# collective of the mixed groups, values against the f64 reference).
# PART=b (run b, prepared after a's one failure, a test's expectation; not run: the session's
# device time ran out): the GPU-facing test binaries with
# mixed groups on the final tree — plans, typed, joins, first_hour, cuda_copies,
# collective_errors, the fault sweep on two virtual CUDA devices with the Vulkan device; then
# perf's small collectives of one CUDA device and host devices (4 KiB to 256 KiB), for run 39.
# Staged by (a): bash bench/gpu/stage.sh bench/gpu/38-folds-and-parts - plans device_groups
# (then run 37's perf added to bins.tar.xz as perf_37); (b): the same with
# "- plans typed joins first_hour cuda_copies collective_errors faults".
# Invoked as (a): timeout -k 5 300 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
# (b, to run): PART=b timeout -k 5 150 bash .gpu/run.sh 2>&1 | tee ... (the rest as a)
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ "${PART:-a}" = b ]; then
  export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
  for b in plans typed joins first_hour cuda_copies collective_errors; do t $b $b 60 --test-threads 2; done
  COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 90 --nocapture
  grep -h -E "^total:" $L/t_faults.log
  grep -h -E "panicked|FAILED|skipped" $L/t_*.log | head -20
  # Before run 39's one-pass joins: the small collectives of one CUDA and host devices.
  for d in cuda:0,cpu:0 cuda:0,cpu:0,cpu:1,cpu:2; do
    p small_${d//[:,]/_} perf --op all_reduce,all_gather,reduce_scatter,all_to_all,gather,reduce --devices $d --sizes 4K,64K,256K --iters 200 --warmup 20
  done
  date; exit
fi
for r in 1 2; do for b in perf_37 perf; do
  for d in cuda:0,vulkan:0 vulkan:0,cuda:0; do
    p a2a_${d//[:,]/_}_${b}_$r $b --op all_to_all --devices $d --sizes 64K,128K,256K,512K,1M --iters 20 --warmup 3
    p ar_${d//[:,]/_}_${b}_$r $b --op all_reduce --algo oneshot --devices $d --sizes 4K,64K,256K,1M --iters 20 --warmup 3
  done
  p vlead_${b}_$r $b --op gather,reduce --devices vulkan:0,cuda:0 --sizes 4K,64K,256K,1M --iters 20 --warmup 3
  p vrs_${b}_$r $b --op reduce_scatter --algo oneshot --devices vulkan:0,cuda:0 --sizes 4K,64K,256K,512K,1M --iters 20 --warmup 3
done; done
timeout 40 python3 $G/anchors.py --sizes 1M --iters 10 > $L/anchors.log 2>&1; tail -1 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t plans plans 40 --test-threads 2 --nocapture
t groups device_groups 150 --test-threads 2
grep -h -E "panicked|FAILED|skipped" $L/t_*.log | head -20
date
