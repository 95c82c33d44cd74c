#!/bin/bash
# GPU run 31d (one H200): 537fcaf, the tree as submitted (Auto on logical devices of one GPU: the
# star all_reduce at every size; the star reduce_scatter, broadcast and all_gather below 16 MiB,
# the one-shot from it) — the tests: plans on three virtual devices and on the physical mapping,
# lib (the algo and flag tests among them), cuda_native on 2, 3, 4 and 8 virtual devices (the
# automatic choice printed), cuda_ops, the fault sweep on two virtual devices; perf's Auto on 4 and
# 8 virtual devices around the threshold (4 MiB, 16 MiB, 256 MiB) for every collective the choice
# covers, issue 14's 4 KiB rows, and anchors.py in the same command.
# Invoked as: timeout -k 5 590 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
p() { local tag=$1 b=$2; shift 2; local s=$(date +%s); timeout 120 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$? $(( $(date +%s) - s ))s $(grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log | awk '{printf "%s %s %s %s #%s; ", $1, $2, $6, $7, $10}')"; grep -E '^error|panicked' $L/$tag.log; }
COLLECTIVES_CUDA_DEVICES=0,0,0 t plans3 plans 30
t plans1 plans 30
t lib lib 150 --test-threads 4
for devs in 0,0 0,0,0 0,0,0,0 0,0,0,0,0,0,0,0; do
COLLECTIVES_CUDA_DEVICES=$devs t native_${#devs} cuda_native 80 --test-threads 2 --show-output
grep -h "devices, " $L/t_native_${#devs}.log | sort -u | tr '\n' ' '; echo
done
t ops cuda_ops 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 70
grep -h "^total:" $L/t_faults2.log
for n in 4 8; do
devs=$(seq -s, 0 $((n-1)) | sed 's/[0-9]\+/cuda:&/g'); map=$(printf '0,%.0s' $(seq $n) | sed 's/,$//')
for op in all_reduce reduce_scatter broadcast all_gather; do
COLLECTIVES_CUDA_DEVICES=$map p ${op}_$n perf --op $op --devices $devs --sizes 4M,16M,256M --iters 10 --warmup 2
done; done
p lr perf --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
p ch perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
COLLECTIVES_CUDA_DEVICES=0,0 p cc perf --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 2000 --warmup 100
p c8 perf --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 --sizes 4K --iters 2000 --warmup 100
timeout 40 python3 $G/anchors.py --sizes 1M --iters 20 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
