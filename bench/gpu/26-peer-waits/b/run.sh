#!/bin/bash
# GPU run 26b (one H200): host waits for Vulkan submissions poll the timeline for up to
# COLLECTIVES_VULKAN_SPIN_US (default 200) before blocking in vkWaitSemaphores, on top of run
# 26a's tree. The probe (empty submissions and a 4 KiB add waited for by blocking and by
# polling; the library's local_reduce on vulkan:0 with the budget unset and 0). Tests with the
# default budget: lib, device_groups, vulkan_ops, vulkan_collectives, typed. perf with the budget
# 0 (as before), 200 (the default) and 50, interleaved, two rounds: small Vulkan-rooted and mixed
# calls, and large moves; perf_base (bfe786b) beside for the 4 KiB vulkan:0 -> cuda:0 broadcast
# run 26a read slower (11.5 against 9.7-10.3 us, 20 iterations); anchors.py in the same command.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
PR="--ignored --exact --test-threads 1 --nocapture backend::vulkan::probe::small_call_waits_probe"
t probe lib 60 $PR; grep -o "probe:.*" $L/t_probe.log
COLLECTIVES_VULKAN_SPIN_US=0 t probe0 lib 60 $PR; grep -o "probe:.*local_reduce.*" $L/t_probe0.log
t lib lib 240 --test-threads 4
t groups device_groups 150 --test-threads 2
t vops vulkan_ops 150 --test-threads 2
t vcoll vulkan_collectives 100 --test-threads 2
t typed typed 60
grep -h -E "panicked|FAILED|warning" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 90 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2; do
  p base_vc_$r perf_base --op broadcast --devices vulkan:0,cuda:0 --sizes 4K --iters 300 --warmup 20
  for s in 0 200 50; do
    export COLLECTIVES_VULKAN_SPIN_US=$s
    p s${s}_vh_$r perf --op all_reduce,local_reduce --devices vulkan:0,cpu:0 --sizes 4K,64K,1M --iters 300 --warmup 20
    p s${s}_cv_$r perf --op all_reduce,broadcast --devices cuda:0,vulkan:0 --sizes 4K,1M --iters 300 --warmup 20
    p s${s}_vc_$r perf --op broadcast --devices vulkan:0,cuda:0 --sizes 4K --iters 300 --warmup 20
    p s${s}_cvh_$r perf --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 4K --iters 300 --warmup 20
    p s${s}_big_$r perf --op broadcast,all_reduce --devices vulkan:0,cpu:0 --sizes 64M --iters 10 --warmup 2
  done
  unset COLLECTIVES_VULKAN_SPIN_US
done
timeout 60 python3 $G/anchors.py --sizes 1M,64M --iters 20 > $L/anchors.log 2>&1; tail -6 $L/anchors.log
date
