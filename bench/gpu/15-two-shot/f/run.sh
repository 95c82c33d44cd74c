#!/bin/bash
# GPU run 15f (one H200): main as submitted — the tests on 2-8 virtual CUDA devices, with Vulkan
# required, and the fault sweep on 2; the 4 KiB fixed cost on cpu:0..7 and on 2 and 8 virtual
# CUDA devices, three rounds; anchors.py last, in the same command.
# Invoked as: timeout -k 5 360 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1
nproc; uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
V8=0,0,0,0,0,0,0,0
D8=cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7
C8=cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7
COLLECTIVES_CUDA_DEVICES=$V8 t plans8 plans 60
COLLECTIVES_CUDA_DEVICES=$V8 t cuda_native8 cuda_native 170
COLLECTIVES_CUDA_DEVICES=0,0,0,0 REQUIRE_VULKAN=1 t groups4 device_groups 150 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 REQUIRE_VULKAN=1 t faults2 faults 150
t lib lib 100 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
p() { # tag args...: one perf invocation, its rows in the summary
  local tag=$1; shift
  timeout 100 $G/perf "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log
}
date
for r in 1 2 3; do
  p c8_$r --op all_reduce,all_gather,reduce_scatter --devices $C8 --sizes 4K --iters 2000 --warmup 100
  COLLECTIVES_CUDA_DEVICES=0,0 p v2_$r --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 500 --warmup 50
  COLLECTIVES_CUDA_DEVICES=$V8 p v8_$r --op all_reduce,all_gather --devices $D8 --sizes 4K --iters 300 --warmup 30
done
date; timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; tail -25 $L/anchors.log
