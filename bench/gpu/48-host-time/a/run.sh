#!/bin/bash
# Run 48a: where a small CUDA call's host time goes now (host profiles, perf_prof: the release
# perf built with --features profile, symbols kept) — the 4 KiB local_reduce on cuda:0, the
# all_reduce and all_to_all of cuda:0,cpu:0, the all_reduce of two virtual CUDA devices; the
# same rows unprofiled, two rounds; anchors; then every GPU-facing test binary on main's head.
# Staged by: bash bench/gpu/stage.sh bench/gpu/48-host-time/a - lib plans typed joins cuda_ops cuda_copies cuda_faults cuda_native device_groups vulkan_ops vulkan_collectives comm_nccl first_hour faults collective_props (at d2be6d3); then perf_prof: cargo build --release -p collectives-examples --example perf --features profile, strip --strip-debug, xz into .gpu/perf_prof.xz
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && xz -dc $G/perf_prof.xz > $G/perf_prof && chmod +x $G/perf_prof && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nproc
for r in 1 2; do
  p lr_$r perf --op local_reduce --devices cuda:0 --sizes 4K --iters 3000 --warmup 100
  p ch_$r perf --op all_reduce,all_to_all --devices cuda:0,cpu:0 --sizes 4K --iters 3000 --warmup 100
  COLLECTIVES_CUDA_DEVICES=0,0 p v2_$r perf --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 3000 --warmup 100
done
p lr_prof perf_prof --op local_reduce --devices cuda:0 --sizes 4K --iters 600000 --warmup 100 --no-check --profile $L/prof_lr
p ch_prof perf_prof --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500000 --warmup 100 --no-check --profile $L/prof_ch
p ca_prof perf_prof --op all_to_all --devices cuda:0,cpu:0 --sizes 4K --iters 400000 --warmup 100 --no-check --profile $L/prof_ca
COLLECTIVES_CUDA_DEVICES=0,0 p v2_prof perf_prof --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 500000 --warmup 100 --no-check --profile $L/prof_v2
for f in $L/prof_*/*.txt; do echo "== $f"; sed -n 1,30p $f; done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t lib lib 100 --test-threads 4
t plans plans 40
t typed typed 40
t joins joins 40 --test-threads 2
t ops cuda_ops 40 --test-threads 2
t copies cuda_copies 30
t cfaults cuda_faults 40
COLLECTIVES_CUDA_DEVICES=0,0,0 t native3 cuda_native 80 --test-threads 2
t vops vulkan_ops 40
t vcoll vulkan_collectives 60
t nccl comm_nccl 40
t first first_hour 40
t props collective_props 60
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 70 --show-output
grep -h "^total:" $L/t_faults2.log
t groups device_groups 150 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
