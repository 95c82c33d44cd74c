#!/bin/bash
# Run 39b: after run a. Run a streamed small slices too, and they lost (the reduce_scatter and
# all_to_all of cuda:0,cpu:0 1-18 us slower: the host member's part, a streamed slice, was no
# longer a copy its host join could place); only concats stream now. And collective_props, with
# cuda:0 now in its random groups, found a panic on empty shards (a host fold casting the empty
# pinned buffer of an empty download, at address 1, to f32): fixed in backend/cpu/mod.rs.
# perf_old is main before run 39 (ffc9215), perf_a run a's build, perf this tree; two
# interleaved rounds; anchors.py in the same command; then collective_props, the changed unit
# tests, device_groups and joins.
# Staged by: bash bench/gpu/stage.sh bench/gpu/39-one-pass-joins/b - lib collective_props device_groups joins
# (then run a's perf and perf_old added to bins.tar.xz as perf_a and perf_old)
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t props collective_props 150 --test-threads 2 --nocapture
OPS=all_gather,reduce_scatter,all_to_all,gather
for r in 1 2; do for b in perf_old perf_a perf; do
  for d in cuda:0,cpu:0 cuda:0,cpu:0,cpu:1,cpu:2; do
    p small_${d//[:,]/_}_${b}_$r $b --op $OPS --devices $d --sizes 4K,64K,256K,512K --iters 100 --warmup 10
  done
  p vk_${b}_$r $b --op all_gather,all_to_all,reduce_scatter --devices cuda:0,vulkan:0,cpu:0 --sizes 4K,64K --iters 50 --warmup 5
done; done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
t lib lib 60 --test-threads 2 backend::cpu backend::cuda::mapped exec::direct exec::stream
t groups device_groups 150 --test-threads 2
t joins joins 40 --test-threads 2
grep -h -E "panicked|FAILED|skipped|minimal failing" $L/t_*.log | head -20
date
