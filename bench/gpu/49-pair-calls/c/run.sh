#!/bin/bash
# Run 49c: the CUDA hub of host-led groups as committed (e45e8cf; perf) against 161dd4d
# (perf_old), three rounds; and where a small call of a CUDA and a Vulkan device alone goes
# through the graph instead of one staged host call (c/trial.diff: COLLECTIVES_TRIAL_GRAPH=1,
# off unless set): both ways in one binary (perf_x: the graph), and host profiles of its 4 KiB
# all_reduce both ways (perf_prof, symbols kept); then the tests on e45e8cf (the knob unset).
# Staged by: bash bench/gpu/stage.sh bench/gpu/49-pair-calls/c 161dd4d lib plans typed vulkan_collectives device_groups collective_props joins first_hour faults (at e45e8cf + c/trial.diff); then perf_prof: cargo build --release -p collectives-examples --example perf --features profile, strip --strip-debug, xz into .gpu/perf_prof.xz
# Invoked as: timeout -k 5 580 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && xz -dc $G/perf_prof.xz > $G/perf_prof && chmod +x $G/perf_prof && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
OPS=all_reduce,reduce_scatter,all_gather
S="--sizes 4K,64K,1M --iters 400 --warmup 20"
both() { local tag=$1; shift; p g_${tag}_perf_old_$r perf_old "$@"; p g_${tag}_perf_$r perf "$@"; }
for r in 1 2 3; do
  both hc --op $OPS --devices cpu:0,cuda:0 $S
  both hhhc --op $OPS --devices cpu:0,cpu:1,cpu:2,cuda:0 $S
  both hvc --op $OPS --devices cpu:0,vulkan:0,cuda:0 $S
  COLLECTIVES_CUDA_DEVICES=0,0 both hcc --op $OPS --devices cpu:0,cuda:0,cuda:1 $S
  both hcG --op all_gather --devices cpu:0,cuda:0 --sizes 256K,4M --iters 200 --warmup 10
done
for r in 1 2; do
  both hcB --op $OPS --devices cpu:0,cuda:0 --sizes 16M,256M --iters 10 --warmup 2
done
V="--op all_reduce,reduce,reduce_scatter,all_gather,broadcast,scatter,gather,all_to_all --sizes 4K,16K --iters 1000 --warmup 50"
for r in 1 2 3; do
  p g_cv_perf_$r perf --devices cuda:0,vulkan:0 $V
  COLLECTIVES_TRIAL_GRAPH=1 p g_cv_perf_x_$r perf --devices cuda:0,vulkan:0 $V
  p g_vc_perf_$r perf --devices vulkan:0,cuda:0 $V
  COLLECTIVES_TRIAL_GRAPH=1 p g_vc_perf_x_$r perf --devices vulkan:0,cuda:0 $V
done
p cv_prof perf_prof --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K --iters 300000 --warmup 100 --no-check --profile $L/prof_cv
COLLECTIVES_TRIAL_GRAPH=1 p cvx_prof perf_prof --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K --iters 300000 --warmup 100 --no-check --profile $L/prof_cvx
p cv64_prof perf_prof --op all_reduce --devices cuda:0,vulkan:0 --sizes 64K --iters 200000 --warmup 100 --no-check --profile $L/prof_cv64
p ch64_prof perf_prof --op all_reduce --devices cuda:0,cpu:0 --sizes 64K --iters 200000 --warmup 100 --no-check --profile $L/prof_ch64
for f in $L/prof_*/*.txt; do echo "== $f"; sed -n 1,24p $f; done
timeout 60 python3 $G/anchors.py --sizes 4K,64K,1M,16M --iters 10 > $L/anchors.log 2>&1; tail -4 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t plans plans 40
t typed typed 40
t vcoll vulkan_collectives 60
t props collective_props 60
t joins joins 40 --test-threads 2
t first first_hour 40
t lib lib 100 --test-threads 4
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 70 --show-output
grep -h "^total:" $L/t_faults2.log
t groups device_groups 150 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
