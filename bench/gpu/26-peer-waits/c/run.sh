#!/bin/bash
# GPU run 26c (one H200), run 26b's binaries: vulkan_ops again with a limit it fits in (run 26b
# stopped it at 150 s on two test threads with 13 of its 14 tests passed; it took 143 s on four
# in run 16a), Vulkan and CUDA required; then a third and fourth interleaved round of run 26b's
# small Vulkan-rooted and mixed rows with the poll budget 0 and 200 (the default).
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t vops vulkan_ops 330 --test-threads 4
grep -h -E "panicked|FAILED|warning" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 90 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 3 4; do
  for s in 0 200; do
    export COLLECTIVES_VULKAN_SPIN_US=$s
    p s${s}_vh_$r perf --op all_reduce,local_reduce --devices vulkan:0,cpu:0 --sizes 4K,64K,1M --iters 300 --warmup 20
    p s${s}_cvh_$r perf --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 4K --iters 300 --warmup 20
  done
  unset COLLECTIVES_VULKAN_SPIN_US
done
date
