#!/bin/bash
# GPU run 22d (one H200): main at aaefbe8 (joins on every backend, the one-shot all_gather of a
# CUDA and a host device from 16 MiB, a host join copying its host and Vulkan parts through raw
# ranges of the pinned block). Its tests (joins on one and on two virtual CUDA devices, with the
# pair's all_gather; lib; device_groups; the fault sweep on two virtual CUDA devices); perf_base
# (d85b6a3, main before this stop) against perf for the all_gather of cuda:0,cpu:0 with Auto;
# issue 14's 4 KiB rows, floors.py and anchors.py in the same command.
# Invoked as: timeout -k 5 420 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t joins joins 60
COLLECTIVES_CUDA_DEVICES=0,0 t joins2 joins 60
t lib lib 120 --test-threads 2
t groups device_groups 150 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100 --nocapture
grep -h -E "panicked|FAILED|total:" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 90 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2; do
  for b in perf_base perf; do
    p ${b}_ag_$r $b --op all_gather --devices cuda:0,cpu:0 --sizes 1M,16M,256M --iters 20 --warmup 3
  done
done
for r in 1 2; do
  p lr_$r perf --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
  p ch_$r perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
  COLLECTIVES_CUDA_DEVICES=0,0 p cc_$r perf --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 500 --warmup 50
  COLLECTIVES_CPU_DEVICES=8 p c8s_$r perf --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 --sizes 4K --iters 500 --warmup 50
done
timeout 60 python3 $G/floors.py > $L/floors.log 2>&1; tail -5 $L/floors.log
timeout 120 python3 $G/anchors.py --sizes 4K,1M,16M,256M,1G --iters 20 > $L/anchors.log 2>&1; tail -8 $L/anchors.log
date
