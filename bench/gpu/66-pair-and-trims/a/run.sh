#!/bin/bash
# Run 66a: the direct path's trims (ecb5192, in 47a9a81: perf_old) and a small reduce of two
# inputs into one through the binary kernel (pair_op, this tree: perf) against the tree before
# both (5bfde7f, perf_5bf, built by hand in a worktree of its own: `cargo build --release -p
# collectives-examples --example perf`, stripped, added to bins.tar.xz), five rounds in turn:
# issue 14's 4 KiB rows (local_reduce of one shard on cuda:0, cuda:0,cpu:0, two virtual devices'
# all_reduce, cpu:0..7) and two rows of a two-input reduce (local_reduce of two shards on cuda:0,
# the reduce of two virtual devices, the leader's kernel reading the other in place); the layers
# probe; anchors; then every GPU-facing test binary on this tree (the trims and pair_op first run
# on a GPU), the native collectives on 2 and 8 virtual devices.
# Staged by: bash bench/gpu/stage.sh bench/gpu/66-pair-and-trims/a 47a9a81 lib cuda_native cuda_ops cuda_copies cuda_faults device_groups issued joins plans typed collective_moves collective_props vulkan_collectives first_hour
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1
I="--sizes 4K --iters 1000 --warmup 100"
V2="cuda:0,cuda:1"
for r in 1 2 3 4 5; do
  for b in perf_5bf perf_old perf; do
    p ${b}_lr_$r $b --op local_reduce --devices cuda:0 $I
    COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_lr2_$r $b --op local_reduce --devices $V2 $I
    COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_rd2_$r $b --op reduce --devices $V2 $I
    COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_v2_$r $b --op all_reduce --devices $V2 $I
    p ${b}_ch_$r $b --op all_reduce --devices cuda:0,cpu:0 $I
    p ${b}_c8_$r $b --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 $I
  done
done
timeout 60 $G/lib --ignored --nocapture --exact backend::cuda::probe::local_reduce_layers_probe \
  > $L/layers.log 2>&1; grep -E "^probe|panicked" $L/layers.log
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
t lib lib 150
for n in 0,0 0,0,0,0,0,0,0,0; do
  COLLECTIVES_CUDA_DEVICES=$n t native$(( (${#n} + 1) / 2 )) cuda_native 90 --test-threads 2
done
t copies cuda_copies 60
t ops cuda_ops 60
t faults cuda_faults 60
COLLECTIVES_CUDA_DEVICES=0,0,0,0 t issued4 issued 90
t plans plans 60
t joins joins 60
t typed typed 60
t moves collective_moves 30
t props collective_props 120
t vcoll vulkan_collectives 60
t first first_hour 60
t groups device_groups 130 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
grep -h -E "fold::tests|launch::tests" $L/t_lib.log | head -20
date
