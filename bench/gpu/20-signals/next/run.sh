#!/bin/bash
# GPU run 20f (one H200): main at 64900b4 — a schedule of CUDA devices and a Vulkan device of the
# same GPU issued from the calling thread at every size (no thread per queue from 1 MiB). Its tests
# (lib, device_groups with both bridges, typed, vulkan_collectives); perf_base (17417a4) against
# perf (64900b4), one round each of the cuda:0,vulkan:0 all_reduce from 1 MiB to 256 MiB and the
# 3-kind all_reduce at 1 MiB (which keeps its threads: a host device).
# Invoked as: timeout -k 5 200 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
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
for b in perf_base perf; do
  p ${b}_ar $b --op all_reduce --devices cuda:0,vulkan:0 --sizes 1M,16M,256M --iters 50 --warmup 5
  p ${b}_ar3 $b --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 1M --iters 20 --warmup 3
done
date
