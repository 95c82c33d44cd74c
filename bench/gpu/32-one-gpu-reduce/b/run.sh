#!/bin/bash
# GPU run 32b (one H200): 0f817a6 (9e60a94's star reduce on one GPU, and all_to_all of CUDA
# devices as one multi-device call) — all_to_all beside all_gather (Auto) on 2, 4 and 8 virtual
# devices at 4 KiB, 1, 16 and 256 MiB; issue 14's 4 KiB rows; anchors.py in the same command; the
# tests: plans on three virtual devices and on the physical mapping, lib, cuda_native on 2, 3, 4
# and 8 (all_to_all in every dtype among them), device_groups, the fault sweep on two virtual
# CUDA devices (the new call under every failpoint), cuda_faults, cuda_ops, cuda_copies, joins.
# Invoked as: timeout -k 5 570 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
p() { local tag=$1 b=$2; shift 2; local s=$(date +%s); timeout 120 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$? $(( $(date +%s) - s ))s $(grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log | awk '{printf "%s %s %s %s #%s; ", $1, $2, $6, $7, $10}')"; grep -E '^error|panicked' $L/$tag.log; }
devs() { seq -s, 0 $(($1-1)) | sed 's/[0-9]\+/cuda:&/g'; }
map() { printf '0,%.0s' $(seq $1) | sed 's/,$//'; }
for n in 2 4 8; do
COLLECTIVES_CUDA_DEVICES=$(map $n) p a2a_$n perf --op all_to_all,all_gather --devices $(devs $n) --sizes 4K,1M,16M,256M --iters 20 --warmup 3
done
p lr perf --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
p ch perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
COLLECTIVES_CUDA_DEVICES=0,0 p cc perf --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 2000 --warmup 100
p c8 perf --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 --sizes 4K --iters 2000 --warmup 100
timeout 40 python3 $G/anchors.py --sizes 1M --iters 10 > $L/anchors.log 2>&1; tail -1 $L/anchors.log
COLLECTIVES_CUDA_DEVICES=0,0,0 t plans3 plans 30
t plans1 plans 30
for m in 0,0 0,0,0 0,0,0,0 0,0,0,0,0,0,0,0; do
COLLECTIVES_CUDA_DEVICES=$m t native_${#m} cuda_native 90 --test-threads 2
done
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 70 --show-output
grep -h "^total:" $L/t_faults2.log
t lib lib 100 --test-threads 4
t groups device_groups 100 --test-threads 2
t cuda_faults cuda_faults 30 --test-threads 2
t ops cuda_ops 40 --test-threads 2
t copies cuda_copies 30
t joins joins 30 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
