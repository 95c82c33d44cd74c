#!/bin/bash
# GPU run 15b (one H200): after the event and copy changes — tests on 2-8 virtual CUDA devices
# and the fault sweep on 2; the 4 KiB fixed cost of perf_a (run 15a's binary: the two-shot, before
# these changes) and perf (after), interleaved, three rounds; host profiles after (perf --profile),
# with cuda:0,vulkan:0 and cuda:0,vulkan:0,cpu:0 beside them; all_reduce one-shot against two-shot
# from 256 KiB to 256 MiB on 2, 4 and 8 virtual devices; anchors.py last, in the same command.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
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
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 120
COLLECTIVES_CUDA_DEVICES=0,0 t cuda_copies cuda_copies 90
t lib lib 100 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
p() { # tag binary args...: one perf invocation, its rows in the summary
  local tag=$1 bin=$2; shift 2
  timeout 100 $G/$bin "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log
}
date
OPS=all_reduce,reduce_scatter,all_gather,broadcast
for r in 1 2 3; do
  for b in perf_a perf; do
    COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_v2_$r $b --op $OPS --devices cuda:0,cuda:1 --sizes 4K --iters 500 --warmup 50
    COLLECTIVES_CUDA_DEVICES=$V8 p ${b}_v8_$r $b --op $OPS --devices $D8 --sizes 4K --iters 300 --warmup 30
    COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_lr_$r $b --op local_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 500 --warmup 50
    p ${b}_cc_$r $b --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
  done
done
date
P=$OUT/logs/prof
COLLECTIVES_CUDA_DEVICES=$V8 p prof_v8 perf --op all_reduce,broadcast --algo oneshot --devices $D8 --sizes 4K --iters 20000 --warmup 100 --profile $P/v8
COLLECTIVES_CUDA_DEVICES=0,0 p prof_v2 perf --op all_reduce --algo oneshot --devices cuda:0,cuda:1 --sizes 4K --iters 100000 --warmup 100 --profile $P/v2
p prof_cv perf --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K --iters 5000 --warmup 50 --profile $P/cuda_vulkan
p prof_cvc perf --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 4K --iters 5000 --warmup 50 --profile $P/cuda_vulkan_cpu
for f in $P/*/*.txt; do echo "== $f"; sed -n '1,16p;/# by inclusive/,+36p' $f | grep -v "std::rt\|lang_start\|_start\|perf::main\|perf::run\|__rust_begin"; done
S=256K,1M,4M,16M,64M,256M
COLLECTIVES_CUDA_DEVICES=$V8 p bw8 perf --op all_reduce --algo oneshot,twoshot,auto --devices $D8 --sizes $S --iters 20 --warmup 3
COLLECTIVES_CUDA_DEVICES=0,0,0,0 p bw4 perf --op all_reduce --algo oneshot,twoshot --devices $D4 --sizes $S --iters 20 --warmup 3
COLLECTIVES_CUDA_DEVICES=0,0 p bw2 perf --op all_reduce --algo oneshot,twoshot --devices cuda:0,cuda:1 --sizes $S --iters 20 --warmup 3
date; timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; tail -25 $L/anchors.log
