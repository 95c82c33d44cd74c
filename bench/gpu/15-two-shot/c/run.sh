#!/bin/bash
# GPU run 15c (one H200): after the multi-copy kernel (copyseg: a concat along its outermost dim
# and the two-shot's gather step, each one launch) — tests on 2-8 virtual CUDA devices and the
# fault sweep on 2; the 4 KiB fixed cost of perf_b (run 15b's binary) and perf, interleaved;
# all_reduce one-shot against two-shot from 256 KiB to 256 MiB on 2, 4 and 8 virtual devices;
# all_gather one-shot against the star on 8; anchors.py last, in the same command.
# Invoked as: timeout -k 5 500 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1
nproc; uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
V8=0,0,0,0,0,0,0,0
D8=cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7
D4=cuda:0,cuda:1,cuda:2,cuda:3
COLLECTIVES_CUDA_DEVICES=$V8 t plans8 plans 60
COLLECTIVES_CUDA_DEVICES=$V8 t cuda_native8 cuda_native 170
COLLECTIVES_CUDA_DEVICES=0,0,0,0 t groups4 device_groups 120 --test-threads 2
COLLECTIVES_CUDA_DEVICES=$V8 t collectives8 collectives 120 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 120
t cuda_ops cuda_ops 90
t lib lib 100 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
p() { # tag binary args...: one perf invocation, its rows in the summary
  local tag=$1 bin=$2; shift 2
  timeout 100 $G/$bin "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log
}
date
for r in 1 2 3; do
  for b in perf_b perf; do
    COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_v2_$r $b --op all_reduce,all_gather --algo oneshot,twoshot --devices cuda:0,cuda:1 --sizes 4K --iters 500 --warmup 50
    COLLECTIVES_CUDA_DEVICES=$V8 p ${b}_v8_$r $b --op all_reduce,all_gather --algo oneshot,twoshot --devices $D8 --sizes 4K --iters 300 --warmup 30
  done
done
date
S=256K,1M,4M,16M,64M,256M
COLLECTIVES_CUDA_DEVICES=$V8 p bw8 perf --op all_reduce --algo oneshot,twoshot --devices $D8 --sizes $S --iters 20 --warmup 3
COLLECTIVES_CUDA_DEVICES=0,0,0,0 p bw4 perf --op all_reduce --algo oneshot,twoshot --devices $D4 --sizes $S --iters 20 --warmup 3
COLLECTIVES_CUDA_DEVICES=0,0 p bw2 perf --op all_reduce --algo oneshot,twoshot --devices cuda:0,cuda:1 --sizes $S --iters 20 --warmup 3
COLLECTIVES_CUDA_DEVICES=$V8 p ag8 perf --op all_gather --algo oneshot,star --devices $D8 --sizes 4K,64K,1M,16M,256M --iters 20 --warmup 3
COLLECTIVES_CUDA_DEVICES=0,0 p ag2 perf --op all_gather --algo oneshot,star --devices cuda:0,cuda:1 --sizes 4K,64K,1M,16M,256M --iters 20 --warmup 3
date; timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; tail -25 $L/anchors.log
