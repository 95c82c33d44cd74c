#!/bin/bash
# GPU run 26d (one H200): whether the Vulkan wait's poll should yield between reads of the
# timeline. Run b read the cuda:0,vulkan:0 rows at 1 MiB 2-4 us slower with the poll (two
# rounds). `perf` is 5227c1b (a tight poll, std::hint::spin_loop between reads); `perf_y` the
# same tree with std::thread::yield_now instead; `perf` with COLLECTIVES_VULKAN_SPIN_US=0 (no
# poll) is the reference. Three interleaved rounds of the small mixed and Vulkan-rooted rows.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
p() { local tag=$1 b=$2; shift 2; timeout 90 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2 3; do
  for v in none tight yield; do
    b=perf; [ $v = yield ] && b=perf_y
    if [ $v = none ]; then export COLLECTIVES_VULKAN_SPIN_US=0; else unset COLLECTIVES_VULKAN_SPIN_US; fi
    p ${v}_cv_$r $b --op all_reduce,broadcast --devices cuda:0,vulkan:0 --sizes 4K,1M --iters 300 --warmup 20
    p ${v}_cvh_$r $b --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 4K,1M --iters 300 --warmup 20
    p ${v}_vh_$r $b --op all_reduce,local_reduce --devices vulkan:0,cpu:0 --sizes 4K,64K --iters 300 --warmup 20
  done
done
unset COLLECTIVES_VULKAN_SPIN_US
date
