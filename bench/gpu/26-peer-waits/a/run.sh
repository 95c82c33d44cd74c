#!/bin/bash
# GPU run 26a (one H200): the peer bridge (a Vulkan device reached through `via`, another CUDA
# device of its GPU, by one peer copy into or out of the memory `via` maps), on top of bfe786b.
# Tests: lib (the device bridge's tests, whose mapped copies now go through the peer bridge's
# code with `via` the CUDA end itself); lib's staged tests again on two virtual CUDA devices of
# the GPU (COLLECTIVES_CUDA_DEVICES=0,0), where the peer tests run with cu = cuda:1 and
# via = cuda:0; device_groups with both bridges, typed, cuda_copies, the fault sweep on two
# virtual CUDA devices. perf_base (bfe786b) against perf on the device bridge's rows (CUDA <->
# Vulkan of one GPU), two interleaved rounds; anchors.py in the same command.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
COLLECTIVES_CUDA_DEVICES=0,0 t peer lib 150 --test-threads 2 --nocapture backend::staged
grep -h -E "^peer bridge:|^skipped" $L/t_peer.log | sort | uniq -c
t lib lib 240 --test-threads 4
t groups device_groups 150 --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 100 --test-threads 2 cuda_vulkan_and_host cuda_and_vulkan
t typed typed 60
t copies cuda_copies 100
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100
grep -h -E "panicked|FAILED|warning" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 90 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2; do
  for b in perf_base perf; do
    p ${b}_bc_$r $b --op broadcast --devices cuda:0,vulkan:0 --sizes 4K,1M,64M,1G --iters 20 --warmup 3
    p ${b}_vc_$r $b --op broadcast --devices vulkan:0,cuda:0 --sizes 4K,1M,64M,1G --iters 20 --warmup 3
    p ${b}_ar_$r $b --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K,1M,64M --iters 20 --warmup 3
  done
done
timeout 60 python3 $G/anchors.py --sizes 1M,64M --iters 20 > $L/anchors.log 2>&1; tail -6 $L/anchors.log
date
