#!/bin/bash
# GPU run 19a (one H200): main at 9502b60 (33a7aca's review, never run on a GPU). The tests of
# every binary that runs CUDA; floors.py (the link both ways at once, the round trip of the
# smallest GPU work) and anchors.py in the same command as perf; perf: the host-staged moves
# between cuda:0 and vulkan:0 and each API's own moves to and from the host, 1 GiB; the 4 KiB
# fixed-cost rows of issues 14 and 15, three rounds.
# Invoked as: timeout -k 5 580 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
date; timeout 90 python3 $G/floors.py --json $L/floors.json > $L/floors.log 2>&1; echo "floors rc=$?"; cat $L/floors.json
p() { local tag=$1; shift; timeout 60 $G/perf "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error' $L/$tag.log; }
COLLECTIVES_BRIDGE=host p hs_cv --op broadcast --devices cuda:0,vulkan:0 --sizes 1G --iters 5 --warmup 2
COLLECTIVES_BRIDGE=host p hs_vc --op broadcast --devices vulkan:0,cuda:0 --sizes 1G --iters 5 --warmup 2
p up_v --op broadcast --devices cpu:0,vulkan:0 --sizes 1G --iters 5 --warmup 2
p down_v --op broadcast --devices vulkan:0,cpu:0 --sizes 1G --iters 5 --warmup 2
p up_c --op broadcast --devices cpu:0,cuda:0 --sizes 1G --iters 5 --warmup 2
p down_c --op broadcast --devices cuda:0,cpu:0 --sizes 1G --iters 5 --warmup 2
for r in 1 2 3; do
  p lr_$r --op local_reduce --devices cuda:0,cuda:0 --sizes 4K --iters 500 --warmup 50
  p ch_$r --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
  COLLECTIVES_CUDA_DEVICES=0,0 p cc_$r --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 500 --warmup 50
  p cv_$r --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K --iters 500 --warmup 50
done
date; timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; grep ceil $L/anchors.log
t lib lib 100 --test-threads 2
t groups device_groups 150 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100
t cuda_copies cuda_copies 60
t cuda_ops cuda_ops 80
t typed typed 40
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
