#!/bin/bash
# GPU run 21a (one H200): main at c1a1cdb. 281dc5e: a schedule of CUDA devices and a Vulkan device
# of the same GPU issued from the calling thread at every size (no thread per queue from 1 MiB; the
# run prepared as bench/gpu/20-signals/next). c1a1cdb: the queues that still take a thread each go
# to a pool of reused workers (the blocking crate). Its tests (lib, device_groups with both bridges,
# typed, vulkan_collectives); perf_base (184cf34, main before both), perf_one (281dc5e) and perf
# (c1a1cdb), two interleaved rounds of the cuda:0,vulkan:0 all_reduce from 1 MiB to 256 MiB, the
# 3-kind all_reduce and the 8-device CPU all_reduce at 1 MiB (host devices: workers per queue);
# then issue 14's 4 KiB fixed-cost rows, floors.py and anchors.py in the same command.
# Invoked as: timeout -k 5 480 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 120 --test-threads 2
t groups device_groups 150 --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 100 --test-threads 2 cuda_vulkan_and_host cuda_and_vulkan
t typed typed 60
t vulkan_collectives vulkan_collectives 60
grep -h -E "panicked|FAILED|waits for" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2; do
  for b in perf_base perf_one perf; do
    p ${b}_ar_$r $b --op all_reduce --devices cuda:0,vulkan:0 --sizes 1M,4M,16M,256M --iters 50 --warmup 5
    p ${b}_ar3_$r $b --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 1M,4M --iters 50 --warmup 5
    COLLECTIVES_CPU_DEVICES=8 p ${b}_c8_$r $b --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 --sizes 1M,4M --iters 100 --warmup 10
  done
done
for r in 1 2; do
  p lr_$r perf --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
  p ch_$r perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
  COLLECTIVES_CUDA_DEVICES=0,0 p cc_$r perf --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 500 --warmup 50
  COLLECTIVES_CPU_DEVICES=8 p c8s_$r perf --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 --sizes 4K --iters 500 --warmup 50
  COLLECTIVES_CPU_DEVICES=8 p c8f_$r perf --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 --sizes 16M,64M --floor --iters 10 --warmup 2
done
timeout 60 python3 $G/floors.py > $L/floors.log 2>&1; tail -5 $L/floors.log
timeout 120 python3 $G/anchors.py --sizes 4K,1M,16M,256M,1G --iters 20 > $L/anchors.log 2>&1; tail -8 $L/anchors.log
date
