#!/bin/bash
# GPU run 23a (one H200): main at 8718ef9 (last stop's three review refactors, not yet run on a
# GPU) plus a timing probe (backend/cuda/probe.rs, release test build): the 4 KiB local_reduce
# layer by layer. Tests: joins (one and two virtual CUDA devices), lib, device_groups (and with
# COLLECTIVES_BRIDGE=host), the fault sweep on two virtual CUDA devices, typed, cuda_copies;
# issue 14's 4 KiB rows, floors.py and anchors.py in the same command.
# Invoked as: timeout -k 5 420 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t probe1 probe 60 --ignored --exact backend::cuda::probe::local_reduce_layers_probe --nocapture
grep -h "^probe:" $L/t_probe1.log
t joins joins 60
COLLECTIVES_CUDA_DEVICES=0,0 t joins2 joins 60
t lib lib 120 --test-threads 2
t groups device_groups 150 --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 150 --test-threads 2 cuda_vulkan
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100 --nocapture
t typed typed 60
t copies cuda_copies 60
grep -h -E "panicked|FAILED|total:" $L/t_*.log | head -20
t probe2 probe 60 --ignored --exact backend::cuda::probe::local_reduce_layers_probe --nocapture
grep -h "^probe:" $L/t_probe2.log
p() { local tag=$1 b=$2; shift 2; timeout 90 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2; do
  p lr_$r perf --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
  p ch_$r perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
  COLLECTIVES_CUDA_DEVICES=0,0 p cc_$r perf --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 500 --warmup 50
done
timeout 60 python3 $G/floors.py > $L/floors.log 2>&1; tail -5 $L/floors.log
timeout 120 python3 $G/anchors.py --sizes 4K,1M,256M --iters 20 > $L/anchors.log 2>&1; tail -8 $L/anchors.log
date
