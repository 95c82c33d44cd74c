#!/bin/bash
# GPU run 19d (one H200): the working tree after d3b927c (small CUDA allocations parked) plus the
# Vulkan timeline imported into CUDA (a move out of a Vulkan buffer waits for its writer on the
# GPU). Tests of every binary that runs CUDA (the new a_move_from_vulkan_waits_for_its_writer_on_the_gpu
# among lib's); floors.py and anchors.py in the same command as perf; perf_base (main at 9502b60)
# against perf (this tree), two interleaved rounds: the 4 KiB fixed-cost rows and the moves and
# all_reduce between cuda:0 and vulkan:0 that take the direct bridge.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 100 --test-threads 2 --nocapture
grep -E "import refused|skipped" $L/t_lib.log | head
t groups device_groups 150 --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 100 --test-threads 2 cuda_vulkan_and_host
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100
t cuda_copies cuda_copies 60
t cuda_ops cuda_ops 80
t typed typed 40
grep -h -E "panicked|FAILED|warning" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning' $L/$tag.log; }
for r in 1 2; do for b in perf_base perf; do
  p ${b}_lr_$r $b --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
  p ${b}_ch_$r $b --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
  COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_cc_$r $b --op all_reduce,reduce_scatter,all_gather --devices cuda:0,cuda:1 --sizes 4K --iters 500 --warmup 50
  p ${b}_cv_$r $b --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K,16M,256M --iters 20 --warmup 3
  p ${b}_vc_$r $b --op all_reduce,broadcast --devices vulkan:0,cuda:0 --sizes 16M,256M --iters 20 --warmup 3
done; done
date; timeout 90 python3 $G/floors.py --json $L/floors.json > $L/floors.log 2>&1; echo "floors rc=$?"; grep -A3 '"add"\|memset\|link' $L/floors.json | head -20
timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; grep ceil $L/anchors.log
date
