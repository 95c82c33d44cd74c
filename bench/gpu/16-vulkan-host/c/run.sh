#!/bin/bash
# GPU run 16c (one H200): small schedules issued from the calling thread (perf) against one
# thread per queue (perf_t), both with Vulkan tensors under 1 MiB in host memory, interleaved,
# two rounds; the debug log's step timeline of the 4 KiB mixed calls (run 16b ran
# the same with GROUPS, which bash sets, as the group list: only its broadcasts ran).
# Invoked as: timeout -k 5 300 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
p() { # tag binary args...: one perf invocation, its rows in the summary
  local tag=$1 bin=$2; shift 2
  timeout 60 $G/$bin "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log
}
GRPS="cuda:0,vulkan:0 cuda:0,vulkan:0,cpu:0 cuda:0,cpu:0 vulkan:0,cpu:0"
for r in 1 2; do
  for b in perf_t perf; do
    for g in $GRPS; do
      tag=$(echo $g | tr -d ':' | tr ',' '_')
      p ${b}_${tag}_$r $b --op all_reduce --devices $g --sizes 4K,64K --iters 300 --warmup 20
    done
    p ${b}_bc_$r $b --op broadcast --devices cuda:0,vulkan:0 --sizes 4K --iters 300 --warmup 20
    p ${b}_bv_$r $b --op broadcast --devices vulkan:0,cuda:0 --sizes 4K --iters 300 --warmup 20
  done
done
for g in $GRPS; do
  tag=$(echo $g | tr -d ':' | tr ',' '_')
  COLLECTIVES_LOG=debug p log_$tag perf --op all_reduce --devices $g --sizes 4K --iters 6 --warmup 4 --no-check
done
COLLECTIVES_LOG=debug p log_bc perf --op broadcast --devices cuda:0,vulkan:0 --sizes 4K --iters 6 --warmup 4 --no-check
date
