#!/bin/bash
# GPU run 31f (one H200): ef010cc, the tree as submitted (a flagged kernel whose outputs all lie in
# its GPU's memory fences each block for that GPU alone) — lib (the flag's and the launch module's
# tests among them), cuda_ops, cuda_copies, joins, cuda_native on 2 and 8 virtual devices,
# cuda_faults, device_groups (the one-pass kernel's host copies: system fences);
# `flag_on_off_probe` on two virtual devices; perf's issue-14 rows at 4 KiB and anchors.py in the
# same command.
# Invoked as: timeout -k 5 330 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$? $(grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log | awk '{printf "%s %s %s %s #%s; ", $1, $2, $6, $7, $10}')"; grep -E '^error|panicked' $L/$tag.log; }
COLLECTIVES_CUDA_DEVICES=0,0 t ab lib 60 --ignored --nocapture --exact backend::cuda::probe::flags::flag_on_off_probe
grep -h "^probe:" $L/t_ab.log
p lr perf --op local_reduce --devices cuda:0,cpu:0 --sizes 4K,64K,1M --iters 2000 --warmup 100
p ch perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
COLLECTIVES_CUDA_DEVICES=0,0 p cc perf --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 2000 --warmup 100
p c8 perf --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 --sizes 4K --iters 2000 --warmup 100
timeout 40 python3 $G/anchors.py --sizes 1M --iters 10 > $L/anchors.log 2>&1; tail -1 $L/anchors.log
t lib lib 100 --test-threads 4
t ops cuda_ops 40 --test-threads 2
t copies cuda_copies 30
t joins joins 30 --test-threads 2
for devs in 0,0 0,0,0,0,0,0,0,0; do
COLLECTIVES_CUDA_DEVICES=$devs t native_${#devs} cuda_native 60 --test-threads 2
done
t cuda_faults cuda_faults 30 --test-threads 2
t groups device_groups 90 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
