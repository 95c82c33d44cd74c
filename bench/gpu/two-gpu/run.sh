#!/bin/bash
# Two GPUs (kind nvidia-h200-x2), prepared for issue 15's peer bridge: a CUDA device and a Vulkan
# device of two GPUs, the Vulkan GPU's own CUDA device relaying (`Bridge::Peer`). Which Vulkan
# index is which GPU is the driver's order, so both pairs run: one is the device bridge (same
# GPU), the other the peer bridge; the log lines name each pair's bridge. Then the tests, forced
# host staging of the same pairs, and anchors.py in the same command.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
p() { local tag=$1; shift; timeout 90 $G/perf "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"
  grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -h -E 'bridge|^error|panicked' $L/$tag.log | sort | uniq -c | head -5; }
t staged lib 150 --test-threads 2 --nocapture backend::staged
grep -h -E "^peer bridge:|^skipped" $L/t_staged.log | sort | uniq -c
for v in 0 1; do
  COLLECTIVES_LOG=info p bc_to_vk$v --op broadcast --devices cuda:0,vulkan:$v --sizes 4K,1M,64M,1G --iters 10 --warmup 3
  COLLECTIVES_LOG=info p bc_from_vk$v --op broadcast --devices vulkan:$v,cuda:0 --sizes 4K,1M,64M,1G --iters 10 --warmup 3
  p ar_cv$v --op all_reduce --devices cuda:0,vulkan:$v --sizes 4K,1M,256M --iters 10 --warmup 3
  p ar_cvh$v --op all_reduce --devices cuda:0,vulkan:$v,cpu:0 --sizes 4K,256M --iters 10 --warmup 3
  COLLECTIVES_BRIDGE=host p host_to_vk$v --op broadcast --devices cuda:0,vulkan:$v --sizes 64M,1G --iters 5 --warmup 2
  COLLECTIVES_BRIDGE=host p host_from_vk$v --op broadcast --devices vulkan:$v,cuda:0 --sizes 64M,1G --iters 5 --warmup 2
done
t groups device_groups 150 --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 90 --test-threads 2 cuda_vulkan_and_host cuda_and_vulkan
t typed typed 60
t copies cuda_copies 60
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
timeout 60 python3 $G/anchors.py --sizes 1M,64M,1G --iters 10 > $L/anchors.log 2>&1; tail -8 $L/anchors.log
date
