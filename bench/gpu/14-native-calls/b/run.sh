#!/bin/bash
# GPU run 14b (one H200): tests of this change with small contiguous copies as one copy-kernel
# launch (COPY_ENGINE_MIN_BYTES), on 2-8 virtual CUDA devices; then the fixed cost at 4 KiB of
# perf_before (main a856288), perf (the native calls, run 14a's binary) and perf_k (the calls and
# the copy kernel for small copies), interleaved, on 2 and 8 virtual devices; the bandwidth on 8;
# anchors.py last, in the same command.
# Invoked as: timeout -k 5 330 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1
nproc; uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
V8=0,0,0,0,0,0,0,0
D8=cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7
COLLECTIVES_CUDA_DEVICES=$V8 t plans8 plans 60
COLLECTIVES_CUDA_DEVICES=$V8 t cuda_native8 cuda_native 150
COLLECTIVES_CUDA_DEVICES=0,0 t groups2 device_groups 150 --test-threads 2
COLLECTIVES_CUDA_DEVICES=$V8 t collectives8 collectives 120 --test-threads 2
t lib lib 120 --test-threads 2
t cuda_ops cuda_ops 90
t cuda_copies cuda_copies 90
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
p() { # tag binary args...: one perf invocation, its rows in the summary
  local tag=$1 bin=$2; shift 2
  timeout 120 $G/$bin "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log
}
date
OPS=all_reduce,reduce_scatter,all_gather,broadcast
for r in 1 2 3; do
  for b in perf_before perf perf_k; do
    COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_v2_$r $b --op $OPS --devices cuda:0,cuda:1 --sizes 4K --iters 200 --warmup 20
    COLLECTIVES_CUDA_DEVICES=$V8 p ${b}_v8_$r $b --op $OPS --devices $D8 --sizes 4K --iters 200 --warmup 20
  done
done
for b in perf_before perf_k; do
  COLLECTIVES_CUDA_DEVICES=$V8 p ${b}_bw8 $b --op $OPS --devices $D8 --sizes 64K,1M,16M,256M --iters 10 --warmup 2
done
date; timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; tail -25 $L/anchors.log
