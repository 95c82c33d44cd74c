#!/bin/bash
# GPU run 28c (one H200): a0c00d0 (a host wait skips work known complete and queries work
# recorded 5 µs ago first) — lib, cuda_native on eight virtual devices, the fault sweep on two;
# perf 4 KiB rows of calls with several outputs (8 and 2 virtual CUDA devices) and issue 14's
# rows with COLLECTIVES_CUDA_SIGNAL=0 and on, same binary, three interleaved rounds; anchors.py
# in the same command.
# Invoked as: timeout -k 5 500 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$? $(grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log | awk '{printf "%s %s %s %s us; ", $1, $2, $6, $7}')"; grep -E '^error|panicked' $L/$tag.log; }
t lib lib 150 --test-threads 4
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native cuda_native 150 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100
grep -h "^total:" $L/t_faults2.log
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
V8=cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7
for r in 1 2 3; do for sig in 0 1; do
export COLLECTIVES_CUDA_SIGNAL=$sig
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 p v8_${sig}_$r perf --op all_reduce,reduce_scatter,all_gather,broadcast --devices $V8 --sizes 4K --iters 1000 --warmup 100
COLLECTIVES_CUDA_DEVICES=0,0 p v2_${sig}_$r perf --op all_reduce,reduce_scatter,all_gather,broadcast --devices cuda:0,cuda:1 --sizes 4K --iters 1000 --warmup 100
p lr_${sig}_$r perf --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
p ch_${sig}_$r perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
p ch3_${sig}_$r perf --op all_reduce --devices cuda:0,cpu:0,cpu:1,cpu:2 --sizes 4K --iters 1000 --warmup 100
done; done
unset COLLECTIVES_CUDA_SIGNAL
timeout 40 python3 $G/anchors.py --sizes 1M --iters 20 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
