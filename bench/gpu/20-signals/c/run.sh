#!/bin/bash
# GPU run 20c (one H200): main at a7a6fed — the lib tests again, the device ring's GPU test giving
# the Vulkan writer 64 adds and printing how long each move took to issue; perf (the same code as
# run b's) rows of the cuda:0,vulkan:0 all_reduce and broadcasts around the 1 MiB bound, for where
# the fixed cost of the mid sizes goes.
# Invoked as: timeout -k 5 300 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 120 --test-threads 2 --nocapture
grep -E "imports? refused|still ran" $L/t_lib.log | head -20
grep -h -E "panicked|FAILED|waits for" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2; do
  p ar_$r perf --op all_reduce --devices cuda:0,vulkan:0 --sizes 64K,512K,1M,4M --algo star,ring --iters 100 --warmup 10
  p bc_$r perf --op broadcast --devices cuda:0,vulkan:0 --sizes 64K,512K,1M,4M --iters 100 --warmup 10
  p vc_$r perf --op broadcast --devices vulkan:0,cuda:0 --sizes 64K,512K,1M,4M --iters 100 --warmup 10
  p lr_$r perf --op local_reduce --devices cuda:0,cpu:0 --sizes 64K,512K,1M,4M --iters 100 --warmup 10
done
date
