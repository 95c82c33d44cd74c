#!/bin/bash
# GPU run 18h (one H200): main at 01906df (host and CUDA slices as views). Tests first: the
# CUDA-beside-host test binaries. Then perf_base (a49cd12: host views only) against perf (01906df:
# CUDA slices as views too), two interleaved rounds of the reduce_scatter and all_to_all rows that
# slice on CUDA; three rounds of the 4 KiB all_reduce of cuda:0,vulkan:0 (issue 15's 40 us).
# Invoked as: timeout -k 5 205 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 40 --test-threads 2
t groups device_groups 100 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 60
t cuda_ops cuda_ops 30

t typed typed 20
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
p() { local tag=$1; shift; timeout 30 "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; }
for r in 1; do for b in perf_base perf; do
  p ${b}_$r $G/$b --op reduce_scatter,all_to_all --devices cuda:0,cpu:0 --sizes 4K,64K,16M --iters 100 --warmup 10
done; done
for r in 1 2; do p cv_$r $G/perf --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K --iters 200 --warmup 20; done
date
