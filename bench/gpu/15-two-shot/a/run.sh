#!/bin/bash
# GPU run 15a (one H200): the two-shot all_reduce's tests on 2-8 virtual CUDA devices and its
# fault sweep on 2; host CPU profiles (perf --profile, pprof) of the 4 KiB calls whose fixed cost
# issue 14 bounds; all_reduce one-shot / two-shot / ring from 64 KiB to 256 MiB on 2, 4 and 8
# virtual devices; anchors.py last, in the same command.
# Invoked as: timeout -k 5 570 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
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
t lib lib 100 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
p() { # tag args...: one perf invocation, its rows in the summary
  local tag=$1; shift
  timeout 100 $G/perf "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log
}
date
# Profiles of the fixed cost: a few seconds of calls each.
P=$OUT/logs/prof
COLLECTIVES_CUDA_DEVICES=$V8 p prof_v8 --op all_reduce,broadcast --algo oneshot --devices $D8 --sizes 4K --iters 20000 --warmup 100 --profile $P/v8
COLLECTIVES_CUDA_DEVICES=0,0 p prof_v2 --op all_reduce --algo oneshot --devices cuda:0,cuda:1 --sizes 4K --iters 100000 --warmup 100 --profile $P/v2
COLLECTIVES_CUDA_DEVICES=0,0 p prof_local --op local_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 100000 --warmup 100 --profile $P/local
p prof_cc --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 50000 --warmup 100 --profile $P/cuda_cpu
for f in $P/*/*.txt; do echo "== $f"; sed -n '1,16p;/# by inclusive/,+32p' $f; done
# Stream connections: 8 virtual devices use 24 streams, the driver's default is 8 hardware queues.
COLLECTIVES_CUDA_DEVICES=$V8 CUDA_DEVICE_MAX_CONNECTIONS=32 p conn32_v8 --op all_reduce,broadcast --algo oneshot --devices $D8 --sizes 4K --iters 2000 --warmup 100
COLLECTIVES_CUDA_DEVICES=$V8 p conn8_v8 --op all_reduce,broadcast --algo oneshot --devices $D8 --sizes 4K --iters 2000 --warmup 100
# The two-shot against the one-shot and the ring.
S=64K,256K,1M,4M,16M,64M,256M
COLLECTIVES_CUDA_DEVICES=$V8 p bw8 --op all_reduce --algo oneshot,twoshot,ring,auto --devices $D8 --sizes $S --iters 20 --warmup 3
COLLECTIVES_CUDA_DEVICES=0,0,0,0 p bw4 --op all_reduce --algo oneshot,twoshot,ring --devices $D4 --sizes $S --iters 20 --warmup 3
COLLECTIVES_CUDA_DEVICES=0,0 p bw2 --op all_reduce --algo oneshot,twoshot --devices cuda:0,cuda:1 --sizes $S --iters 20 --warmup 3
date; timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; tail -25 $L/anchors.log
