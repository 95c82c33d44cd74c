#!/bin/bash
# GPU run 20e (one H200): main at 17417a4 (the device bridge from 256 KiB) — its tests (lib,
# device_groups with both bridges, the fault sweep, typed, cuda_copies, vulkan_collectives) and
# perf_main (a7a6fed: the bridge from 1 MiB) against perf (17417a4), one round each side of the
# moves, the mixed all_reduce and a Vulkan download around the new bound; anchors.py.
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
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
t cuda_copies cuda_copies 60
t vulkan_collectives vulkan_collectives 60
grep -h -E "panicked|FAILED|waits for" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
S=128K,256K,512K
for b in perf_main perf; do
  p ${b}_bc $b --op broadcast --devices cuda:0,vulkan:0 --sizes $S --iters 100 --warmup 10
  p ${b}_vc $b --op broadcast --devices vulkan:0,cuda:0 --sizes $S --iters 100 --warmup 10
  p ${b}_ar $b --op all_reduce --devices cuda:0,vulkan:0 --sizes $S --iters 100 --warmup 10
  p ${b}_vh $b --op broadcast --devices vulkan:0,cpu:0 --sizes $S --iters 100 --warmup 10
done
date; timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; grep ceil $L/anchors.log
date
