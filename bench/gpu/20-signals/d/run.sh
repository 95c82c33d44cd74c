#!/bin/bash
# GPU run 20d (one H200): main at a7a6fed with share64k.diff (the device bridge from 64 KiB: on a
# GPU CUDA shares, Vulkan tensor buffers of 64 KiB and up get exportable memory of their own,
# parked on release, and a CUDA <-> Vulkan move of one GPU goes direct from 64 KiB instead of
# 1 MiB). The tests of that tree (lib, device_groups with both bridges, the fault sweep, typed,
# cuda_copies); perf (main) against perf_new (the diff), two interleaved rounds of the moves, the
# mixed all_reduce, and rows a Vulkan tensor's placement may slow (host <-> Vulkan, a Vulkan fold);
# anchors.py in the same command.
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
t cuda_copies cuda_copies 60
grep -h -E "panicked|FAILED|waits for" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
S=32K,64K,128K,256K,512K,1M
for r in 1 2; do for b in perf perf_new; do
  p ${b}_bc_$r $b --op broadcast --devices cuda:0,vulkan:0 --sizes $S --iters 100 --warmup 10
  p ${b}_vc_$r $b --op broadcast --devices vulkan:0,cuda:0 --sizes $S --iters 100 --warmup 10
  p ${b}_ar_$r $b --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K,$S --iters 100 --warmup 10
  p ${b}_ar3_$r $b --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 4K,64K,512K --iters 100 --warmup 10
  p ${b}_vh_$r $b --op all_reduce,broadcast --devices vulkan:0,cpu:0 --sizes 64K,256K,512K --iters 100 --warmup 10
  p ${b}_vl_$r $b --op local_reduce --devices vulkan:0,cpu:0 --sizes 64K,256K,512K --iters 100 --warmup 10
done; done
date; timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; grep ceil $L/anchors.log
date
