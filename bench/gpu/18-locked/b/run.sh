#!/bin/bash
# GPU run 18b (one H200): run 18a's build plus the one-pass streamed kernel (backend/cuda/mapped.rs:
# a CUDA kernel under STREAM_SMALL_BYTES = 1 MiB reads its host inputs from pinned memory in place,
# its result downloaded on the same stream) and the test fix. Tests first; then, before/after in
# the same binary (COLLECTIVES_STREAM=0 is before), two interleaved rounds at 4 KiB to 1 MiB;
# the locked 256 MiB rows again; anchors.py.
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
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
grep -h "cuda+cpu" $L/t_faults2.log | head
p() { # tag args...: one perf invocation, its rows in the summary
  local tag=$1; shift
  timeout 90 $G/perf "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error' $L/$tag.log
}
for r in 1 2; do
  for s in 0 1; do
    export COLLECTIVES_STREAM=$s
    p ch_s${s}_$r --op all_reduce,reduce,local_reduce --devices cuda:0,cpu:0 --sizes 4K,64K,256K,1M --iters 100 --warmup 10
    p cvh_s${s}_$r --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 4K,64K,256K,1M --iters 100 --warmup 10
  done
done
unset COLLECTIVES_STREAM
p big --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 256M --iters 10 --warmup 2
COLLECTIVES_LOG=debug timeout 60 $G/perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2 --warmup 2 > $L/timeline_4k.log 2>&1; echo "timeline rc=$?"
date; timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; grep ceil $L/anchors.log
date
