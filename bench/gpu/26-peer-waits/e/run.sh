#!/bin/bash
# GPU run 26e (one H200): the tests on the tree as submitted (the peer bridge; Vulkan waits that
# poll, yielding between reads, for up to 200 us): lib's staged tests on two logical CUDA devices
# of the GPU (the peer tests), lib, device_groups with both bridges, vulkan_ops,
# vulkan_collectives, typed, cuda_copies, the fault sweep on two virtual CUDA devices; one round
# of the small Vulkan-rooted and mixed rows; anchors.py in the same command.
# Invoked as: timeout -k 5 470 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
COLLECTIVES_CUDA_DEVICES=0,0 t peer lib 100 --test-threads 2 --nocapture backend::staged
grep -h -E "^peer bridge:|^skipped" $L/t_peer.log | sort | uniq -c
t lib lib 150 --test-threads 4
t groups device_groups 120 --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 60 --test-threads 2 cuda_vulkan_and_host cuda_and_vulkan
t vops vulkan_ops 200 --test-threads 4
t vcoll vulkan_collectives 60 --test-threads 2
t typed typed 60
t copies cuda_copies 60
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 80
grep -h -E "panicked|FAILED|warning" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
p vh perf --op all_reduce,local_reduce --devices vulkan:0,cpu:0 --sizes 4K,64K --iters 300 --warmup 20
p cv perf --op all_reduce,broadcast --devices cuda:0,vulkan:0 --sizes 4K,1M --iters 300 --warmup 20
p cvh perf --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 4K --iters 300 --warmup 20
timeout 40 python3 $G/anchors.py --sizes 1M,64M --iters 20 > $L/anchors.log 2>&1; tail -6 $L/anchors.log
date
