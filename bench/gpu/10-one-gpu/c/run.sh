#!/bin/bash
# GPU run 10c (one H200): the lib tests at the one-rank NCCL f64 PreMulSum refusal; a diagnosis of
# the cuda:0+vulkan:0 ring all_reduce regression at 16 MiB: old (df0f592) and new interleaved, 4-64
# MiB, new also with the staged-chain fusion off (COLLECTIVES_STAGED_CHAIN=0) and as a broadcast.
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
s=$(date +%s); timeout 120 $G/lib --test-threads 2 > $L/t_lib.log 2>&1; echo "lib rc=$? $(( $(date +%s)-s ))s $(grep -E '^test result' $L/t_lib.log)"
grep -h -E "panicked|wrong" $L/t_lib.log | head
p() { local tag=$1 bin=$2; shift 2; local s=$(date +%s)
  timeout 60 $G/$bin "$@" --json $L/perf_$tag.json > $L/perf_$tag.log 2>&1; echo "perf $tag rc=$? $(( $(date +%s)-s ))s"; }
N="--dtype f32 --iters 20 --warmup 5 --devices cuda:0,vulkan:0 --sizes 4M..64M"
for k in 1 2; do
  p old_$k perf_old --op all_reduce --algo ring,star $N
  p new_$k perf --op all_reduce --algo ring,star $N
  COLLECTIVES_STAGED_CHAIN=0 p new_nofuse_$k perf --op all_reduce --algo ring $N
done
p bc_old perf_old --op broadcast,reduce_scatter,all_gather --algo ring $N
p bc_new perf --op broadcast,reduce_scatter,all_gather --algo ring $N
for f in $L/perf_*.log; do echo "== $f"; grep -E "^\s+[0-9]" $f; done
