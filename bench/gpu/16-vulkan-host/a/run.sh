#!/bin/bash
# GPU run 16a (one H200): Vulkan tensors under 1 MiB in host memory (COLLECTIVES_VULKAN_HOST_BYTES)
# — lib (the new Vulkan tests), the mixed-group and Vulkan tests with Vulkan required, the fault
# sweep on 2; the small mixed calls with the default bound and with 0 (every tensor in device
# memory, as before), interleaved, two rounds; host profiles of the 4 KiB mixed calls; the
# 8-device CPU all_reduce against its memcpy floor; anchors.py last, in the same command.
# Invoked as: timeout -k 5 570 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 100 --test-threads 2
t groups device_groups 100 --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 100 --test-threads 2 cuda_
t vulkan_ops vulkan_ops 150 --test-threads 2
t vulkan_coll vulkan_collectives 60
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 120
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
p() { # tag args...: one perf invocation, its rows in the summary
  local tag=$1; shift
  timeout 60 $G/perf "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log
}
date
S=4K,64K,512K
for r in 1 2; do
  for h in 0 default; do
    if [ $h = 0 ]; then export COLLECTIVES_VULKAN_HOST_BYTES=0; else unset COLLECTIVES_VULKAN_HOST_BYTES; fi
    p cv_${h}_$r --op all_reduce,broadcast --devices cuda:0,vulkan:0 --sizes $S --iters 50 --warmup 5
    p vc_${h}_$r --op all_reduce,broadcast --devices vulkan:0,cuda:0 --sizes $S --iters 50 --warmup 5
    p cvh_${h}_$r --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes $S --iters 50 --warmup 5
    p vh_${h}_$r --op all_reduce,local_reduce --devices vulkan:0,cpu:0 --sizes $S,1M --iters 50 --warmup 5
  done
done
unset COLLECTIVES_VULKAN_HOST_BYTES
p prof --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K --iters 3000 --warmup 50 --profile $L/prof/cv
p prof3 --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 4K --iters 3000 --warmup 50 --profile $L/prof/cvh
C8=cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7
COLLECTIVES_CPU_DEVICES=8 p c8floor --op all_reduce --devices $C8 --sizes 16M..256M --floor --iters 10 --warmup 2
date; timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; tail -25 $L/anchors.log
