#!/bin/bash
# GPU run 14a (one H200): the native CUDA collectives as one multi-device call (all_reduce,
# reduce_scatter, all_gather, broadcast on virtual CUDA devices), tests first; then the fixed cost
# at 4 KiB and the bandwidth to 256 MiB, before (perf_before: main a856288) and after (perf: this
# change), interleaved; anchors.py last, in the same command.
# Invoked as: timeout -k 5 570 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1
nproc; uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
V8=0,0,0,0,0,0,0,0
COLLECTIVES_CUDA_DEVICES=$V8 t cuda_native8 cuda_native 150 --nocapture
COLLECTIVES_CUDA_DEVICES=$V8 t plans8 plans 60
COLLECTIVES_CUDA_DEVICES=0,0 t groups2 device_groups 150 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0,0 t groups4 device_groups 150 --test-threads 2
COLLECTIVES_CUDA_DEVICES=$V8 t collectives8 collectives 120 --test-threads 2
COLLECTIVES_CUDA_DEVICES=$V8 t moves8 collective_moves 120 --test-threads 2
t lib lib 120 --test-threads 2
t cuda_ops cuda_ops 90
t cuda_copies cuda_copies 90
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
grep -h "devices, " $L/t_cuda_native8.log | head -16
p() { # tag binary args...: one perf invocation, its rows in the summary
  local tag=$1 bin=$2; shift 2
  timeout 120 $G/$bin "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log
}
date
OPS=all_reduce,reduce_scatter,all_gather,broadcast
for r in 1 2 3; do
  for b in perf_before perf; do
    COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_v2_$r $b --op $OPS --devices cuda:0,cuda:1 --sizes 4K --iters 200 --warmup 20
    COLLECTIVES_CUDA_DEVICES=$V8 p ${b}_v8_$r $b --op $OPS --devices cuda:0..7 --sizes 4K --iters 200 --warmup 20
  done
done
for b in perf_before perf; do
  COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_bw2 $b --op $OPS --devices cuda:0,cuda:1 --sizes 1M,16M,256M --iters 10 --warmup 2
  COLLECTIVES_CUDA_DEVICES=$V8 p ${b}_bw8 $b --op $OPS --devices cuda:0..7 --sizes 1M,16M,256M --iters 10 --warmup 2
done
COLLECTIVES_CUDA_DEVICES=0,0 COLLECTIVES_LOG=info p log_v2 perf --op $OPS --devices cuda:0,cuda:1 --sizes 4K --iters 5 --warmup 1
grep -h "chosen" $L/log_v2.log | sort -u | head
date; timeout 150 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; tail -25 $L/anchors.log
