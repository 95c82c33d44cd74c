#!/bin/bash
# Run 55a: the tree at 1eb798e on the GPU (its `issued` test binary e4ecb8e's). The `issued` tests (now with random chains of every
# shard-to-shard collective on random groups holding cuda:0, and chains from four threads at once)
# on one device and on two virtual ones; `collective_props` with cuda:0 in its groups;
# `query_interval_probe` (a flagged wait querying its event every 2, 20 or 200 µs, alternated);
# issue 14's 4 KiB rows, three rounds, realized and with 8 in flight; PyTorch's add (run 54a's
# script, its last check mended); anchors; then every other GPU-facing test binary
# (`REQUIRE_CUDA=1 REQUIRE_VULKAN=1`), as run 54b ran them.
# Staged by: bash bench/gpu/stage.sh bench/gpu/55-verify/a - lib issued collective_props faults cuda_native device_groups cuda_ops cuda_copies cuda_faults joins collective_moves typed vulkan_collectives plans first_hour, then
#   a/torch_issued.py copied to .gpu/; then e4ecb8e's `issued` (stripped) put in .gpu/bins.tar.xz in place of 1eb798e's
# Invoked as: timeout -k 5 480 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t issued1 issued 90 --show-output
COLLECTIVES_CUDA_DEVICES=0,0 t issued2 issued 90
t props collective_props 120
I="--sizes 4K --iters 1000 --warmup 100"
D2=cuda:0,cuda:1 C8=cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7
for r in 1 2 3; do
  for f in 0 8; do
    p lr_f${f}_$r perf --op local_reduce --devices cuda:0 $I --in-flight $f
    p ch_f${f}_$r perf --op all_reduce --devices cuda:0,cpu:0 $I --in-flight $f
    COLLECTIVES_CUDA_DEVICES=0,0 p v2_f${f}_$r perf --op all_reduce --devices $D2 $I --in-flight $f
    p c8_f${f}_$r perf --op all_reduce --devices $C8 $I --in-flight $f
  done
done
timeout 90 python3 $G/torch_issued.py > $L/torch_issued.log 2>&1; grep -h -E "torch:|Error" $L/torch_issued.log
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
COLLECTIVES_CUDA_DEVICES=0,0 t qprobe lib 60 --ignored --nocapture --exact backend::cuda::probe::flags::query_interval_probe
grep -h "^probe:" $L/t_qprobe.log
COLLECTIVES_CUDA_DEVICES=0,0 t lib2 lib 100
COLLECTIVES_CUDA_DEVICES=0,0 t native2 cuda_native 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 60 --show-output
grep -h "^total:" $L/t_faults2.log
t groups device_groups 130 --test-threads 2
t cuda_ops cuda_ops 40
t cuda_copies cuda_copies 40
t cfaults cuda_faults 40
t joins joins 40
t moves collective_moves 30
t typed typed 30
t vcoll vulkan_collectives 60
COLLECTIVES_CUDA_DEVICES=0,0 t plans2 plans 30
t first first_hour 60
COLLECTIVES_CUDA_DEVICES=0,0,0,0 t native4 cuda_native 50 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0,0 t issued4 issued 90
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
