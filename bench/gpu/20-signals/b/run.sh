#!/bin/bash
# GPU run 20b (one H200): main at 5e967cc — each CUDA copy stream signals a Vulkan timeline of its
# own (the device ring's slot reuse waits on the GPU too); the two APIs' raw copies to and from
# page-locked memory alone and at once (the host ring's ceiling on one GPU); lib and
# device_groups (both bridges); perf_base (main at 784f0dc) against perf (5e967cc), three
# interleaved rounds of cuda:0,vulkan:0 all_reduce from 256 KiB to 16 MiB and the forced host
# staging moves at 1 GiB; anchors.py in the same command.
# Invoked as: timeout -k 5 500 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 120 --test-threads 2 --nocapture
grep -E "imports? refused|still ran" $L/t_lib.log | head -20
t probe lib 120 --ignored --nocapture two_apis_copying_at_once_probe
grep -E "^round" $L/t_probe.log
t groups device_groups 150 --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 100 --test-threads 2 cuda_vulkan_and_host cuda_and_vulkan
grep -h -E "panicked|FAILED|waits for" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2 3; do for b in perf_base perf; do
  p ${b}_cv_$r $b --op all_reduce --devices cuda:0,vulkan:0 --sizes 256K,512K,1M,2M,4M,16M --iters 50 --warmup 5
done; done
for b in perf_base perf; do
  COLLECTIVES_BRIDGE=host p ${b}_host_cv $b --op broadcast --devices cuda:0,vulkan:0 --sizes 1G --iters 5 --warmup 1
  COLLECTIVES_BRIDGE=host p ${b}_host_vc $b --op broadcast --devices vulkan:0,cuda:0 --sizes 1G --iters 5 --warmup 1
done
date; timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; grep ceil $L/anchors.log
date
