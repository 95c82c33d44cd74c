#!/bin/bash
# GPU run 22b (one H200): joins on Vulkan devices too. A concat whose parts arrive by copies is a
# join into a Vulkan device (host parts through its output's mapping or one staging buffer, its
# own parts by buffer copies of one submission) and into host memory from a Vulkan device (read
# through its mapping, or a readback). Its tests (joins with the Vulkan cases on the H200's
# device memory, on one and on two virtual CUDA devices; lib; vulkan_collectives; device_groups
# with both bridges; typed; the fault sweep on two virtual CUDA devices); perf_base (d85b6a3, main
# before run a) against perf, two interleaved rounds of all_to_all and all_gather of
# vulkan:0,cpu:0 and of cuda:0,vulkan:0,cpu:0 from 4 KiB to 256 MiB; anchors.py in the same command.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t joins joins 60
COLLECTIVES_CUDA_DEVICES=0,0 t joins2 joins 60
t lib lib 120 --test-threads 2
t vulkan_collectives vulkan_collectives 60
t groups device_groups 150 --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 100 --test-threads 2 cuda_vulkan_and_host cuda_and_vulkan
t typed typed 60
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100 --nocapture
grep -h -E "panicked|FAILED|total:" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 90 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2; do
  for b in perf_base perf; do
    p ${b}_vh_$r $b --op all_to_all,all_gather --devices vulkan:0,cpu:0 --sizes 4K,1M,16M,256M --iters 20 --warmup 3
    p ${b}_cvh_$r $b --op all_to_all,all_gather --devices cuda:0,vulkan:0,cpu:0 --sizes 4K,1M,16M,256M --iters 20 --warmup 3
  done
done
timeout 120 python3 $G/anchors.py --sizes 4K,1M,16M,256M,1G --iters 20 > $L/anchors.log 2>&1; tail -8 $L/anchors.log
date
