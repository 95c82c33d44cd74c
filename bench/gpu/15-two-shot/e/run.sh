#!/bin/bash
# GPU run 15e (one H200): a chain's second hop beside a host hop others need (the device bridge
# on one GPU) — the mixed-group tests with both bridges, the fault sweep (cuda+cpu+vulkan among
# its groups), lib; the three-kind all_reduce and broadcast of perf_d (run 15d's binary) and
# perf, interleaved, two rounds; anchors.py last, in the same command.
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 100 --test-threads 2
t groups device_groups 150 --test-threads 2 cuda_
COLLECTIVES_BRIDGE=host t groups_host device_groups 150 --test-threads 2 cuda_
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 150
t cuda_copies cuda_copies 90
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
p() { # tag binary args...: one perf invocation, its rows in the summary
  local tag=$1 bin=$2; shift 2
  timeout 120 $G/$bin "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log
}
date
for r in 1 2; do
  for b in perf_d perf; do
    p ${b}_3k_$r $b --op all_reduce,broadcast --devices cuda:0,vulkan:0,cpu:0 --sizes 4K,1M,16M,256M --iters 10 --warmup 2
    p ${b}_2k_$r $b --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K,16M,256M --iters 10 --warmup 2
  done
done
date; timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; tail -25 $L/anchors.log
