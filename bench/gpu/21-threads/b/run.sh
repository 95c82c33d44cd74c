#!/bin/bash
# GPU run 21b (one H200): main at 9907844 (54eb49d and its GPU test): a contiguous slice of a
# Vulkan tensor is a view (a VkBuffer bound to the same memory) where it starts on the memory's
# alignment. Its tests (lib with the view tests and the bridge's view test, device_groups with
# both bridges, the fault sweep on two virtual CUDA devices, typed, vulkan_collectives, vulkan_ops,
# cuda_copies, cuda_ops); perf_base (c1a1cdb, before) against perf, two interleaved rounds of the
# reduce_scatter and all_to_all of vulkan:0,cpu:0 and of cuda:0,vulkan:0,cpu:0; anchors.py.
# Invoked as: timeout -k 5 420 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
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
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100
t typed typed 60
t vulkan_collectives vulkan_collectives 60
t vulkan_ops vulkan_ops 150 --test-threads 2
t cuda_copies cuda_copies 60
t cuda_ops cuda_ops 60
grep -h -E "panicked|FAILED|waits for|total:" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2; do
  for b in perf_base perf; do
    p ${b}_vc_$r $b --op reduce_scatter,all_to_all --devices vulkan:0,cpu:0 --sizes 4K,1M,16M --iters 30 --warmup 3
    p ${b}_cvc_$r $b --op reduce_scatter,all_to_all --devices cuda:0,vulkan:0,cpu:0 --sizes 4K,1M,16M --iters 30 --warmup 3
  done
done
timeout 120 python3 $G/anchors.py --sizes 1M,16M,1G --iters 20 > $L/anchors.log 2>&1; tail -4 $L/anchors.log
date
