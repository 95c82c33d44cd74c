#!/bin/bash
# GPU run 23c (one H200): main at 0f4d415 (the star all_reduce of CUDA devices as one launch, the
# direct path for one kernel over inputs on its device) plus the probes' new rows. Tests: lib,
# cuda_native on 8 virtual CUDA devices, device_groups (and with COLLECTIVES_BRIDGE=host), the
# fault sweep on two virtual CUDA devices, joins, typed, cuda_copies, collective_props on two
# virtual CUDA devices; both probes; perf_base (8718ef9) against perf at 4 KiB in three
# interleaved rounds; anchors.py in the same command.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t probe probe 60 --ignored --test-threads 1 --nocapture backend::cuda::probe::
grep -h "^probe:" $L/t_probe.log
t lib lib 120 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native8 cuda_native 150 --test-threads 2 --nocapture
t groups device_groups 150 --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 150 --test-threads 2 cuda_vulkan
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100 --nocapture
COLLECTIVES_CUDA_DEVICES=0,0 t joins2 joins 60
t typed typed 60
t copies cuda_copies 60
COLLECTIVES_CUDA_DEVICES=0,0 t props2 collective_props 150 --test-threads 2
grep -h -E "panicked|FAILED|total:" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 90 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2 3; do
  for b in perf_base perf; do
    p ${b}_lr_$r $b --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
    p ${b}_ch_$r $b --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
    p ${b}_cvh_$r $b --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 4K --iters 500 --warmup 50
    COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_cc_$r $b --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 500 --warmup 50
    COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 p ${b}_c8_$r $b --op all_reduce --devices cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7 --sizes 4K,1M --iters 200 --warmup 20
  done
done
COLLECTIVES_CPU_DEVICES=8 p h8 perf --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 --sizes 4K --iters 500 --warmup 50
timeout 120 python3 $G/anchors.py --sizes 4K,1M,256M --iters 20 > $L/anchors.log 2>&1; tail -4 $L/anchors.log
date
