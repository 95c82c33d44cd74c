#!/bin/bash
# GPU run 18e (one H200): the build as submitted (main at 24f3a10: locking, the one-pass kernel
# with its copy-kernel download). Every test binary that runs CUDA beside host devices; then
# the small and large mixed rows, interleaved with COLLECTIVES_STREAM=0; anchors.py.
# Invoked as: timeout -k 5 570 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 100 --test-threads 2
t groups device_groups 150 --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 100 --test-threads 2 large_ cuda_vulkan_and_host
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 150 --show-output
t cuda_copies cuda_copies 60
t cuda_ops cuda_ops 100
t typed typed 60
t graph graph 60
t graph_props graph_props 100
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
grep -h "cuda+cpu" $L/t_faults2.log | head
p() { # tag args...: one perf invocation, its rows in the summary
  local tag=$1; shift
  timeout 90 $G/perf "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error' $L/$tag.log
}
for r in 1 2; do
  for s in 0 1; do
    export COLLECTIVES_STREAM=$s
    p ch_s${s}_$r --op all_reduce,reduce,reduce_scatter,local_reduce --devices cuda:0,cpu:0 --sizes 4K,64K,1M --iters 200 --warmup 20
    p cvh_s${s}_$r --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 4K,64K,1M,256M --iters 20 --warmup 3
  done
done
unset COLLECTIVES_STREAM
date; timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; grep ceil $L/anchors.log
date
