#!/bin/bash
# GPU run 18g (one H200): the build as submitted (main at 5940672: locking from 1 MiB; before it,
# e036273 shared one test for pinned host memory). The CUDA-beside-host test binaries; then, with
# locking off (COLLECTIVES_HOST_REGISTER_BYTES=0, k0) and on (k1) in the same binary, two
# interleaved rounds of the 1 to 4 MiB rows; anchors.py.
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
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 150 --show-output
t cuda_copies cuda_copies 60
t cuda_ops cuda_ops 100
t typed typed 60
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
grep -h "cuda+cpu" $L/t_faults2.log | head -4
p() { # tag args...: one perf invocation, its rows in the summary
  local tag=$1; shift
  timeout 90 $G/perf "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error' $L/$tag.log
}
for r in 1 2; do
  for k in 0 1; do
    if [ $k = 0 ]; then export COLLECTIVES_HOST_REGISTER_BYTES=0; else unset COLLECTIVES_HOST_REGISTER_BYTES; fi
    p up_k${k}_$r --op broadcast --devices cpu:0,cuda:0 --sizes 1M,2M,4M --iters 100 --warmup 10
    p ch_k${k}_$r --op all_reduce,reduce --devices cuda:0,cpu:0 --sizes 1M,4M --iters 100 --warmup 10
  done
done
unset COLLECTIVES_HOST_REGISTER_BYTES
COLLECTIVES_LOG=info timeout 60 $G/perf --op broadcast --devices cpu:0,cuda:0 --sizes 1M,2M --iters 3 --warmup 2 > $L/lock_cost.log 2>&1; echo "lock_cost rc=$?"; grep -E "locked|staged" $L/lock_cost.log | head
date; timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; grep ceil $L/anchors.log
date
