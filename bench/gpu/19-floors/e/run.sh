#!/bin/bash
# GPU run 19e (one H200): main at ffe4fc8, run 19d's tree with its two faults fixed (the
# semaphore's import descriptor built field by field, since mem::zeroed refuses its enum; the new
# test calls the direct move itself, since an earlier test of the process marks the pair's sharing
# failed) and a shared Vulkan buffer that CUDA wrote waited for by its event. Tests of every binary
# that runs CUDA beside Vulkan; perf_base (main at 9502b60) against perf (ffe4fc8), two interleaved
# rounds of the moves and all_reduce between cuda:0 and vulkan:0 and of the 4 KiB fixed-cost rows;
# anchors.py.
# Invoked as: timeout -k 5 330 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 100 --test-threads 2 --nocapture
grep -E "import refused|skipped|waits for" $L/t_lib.log | head
t groups device_groups 150 --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 100 --test-threads 2 cuda_vulkan_and_host cuda_and_vulkan
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100
t cuda_copies cuda_copies 60
grep -h -E "panicked|FAILED|waits for" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2; do for b in perf_base perf; do
  p ${b}_cv_$r $b --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K,16M,256M --iters 20 --warmup 3
  p ${b}_vc_$r $b --op all_reduce,broadcast --devices vulkan:0,cuda:0 --sizes 16M,256M --iters 20 --warmup 3
  p ${b}_lr_$r $b --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
  COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_cc_$r $b --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 500 --warmup 50
done; done
date; timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; grep ceil $L/anchors.log
date
