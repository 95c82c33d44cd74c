#!/bin/bash
# GPU run 27c (one H200): names formatted once, driver errors' strings only on error
# (`perf`, this tree) against main (`perf_base`, 5006b32) on the 4 KiB calls of issue 14, three
# interleaved rounds; lib, cuda_native, cuda_ops, device_groups on the tree; anchors.py in the
# same command.
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$? $(grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log | awk '{printf "%s %s %s %s us; ", $1, $2, $6, $7}')"; grep -E '^error|panicked' $L/$tag.log; }
for r in 1 2 3; do for b in perf_base perf; do
p ${b}_ch_$r $b --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 3000 --warmup 100
p ${b}_ch3_$r $b --op all_reduce --devices cuda:0,cpu:0,cpu:1,cpu:2 --sizes 4K --iters 3000 --warmup 100
p ${b}_lr_$r $b --op local_reduce --devices cuda:0 --sizes 4K --iters 3000 --warmup 100
COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_v2_$r $b --op all_reduce,all_gather,reduce_scatter --devices cuda:0,cuda:1 --sizes 4K --iters 3000 --warmup 100
COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_v2o_$r $b --op all_reduce --algo oneshot --devices cuda:0,cuda:1 --sizes 4K --iters 3000 --warmup 100
p ${b}_cv_$r $b --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K --iters 3000 --warmup 100
done; done
t lib lib 150 --test-threads 4
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native cuda_native 150 --test-threads 2
t ops cuda_ops 90 --test-threads 2
t groups device_groups 120 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
timeout 40 python3 $G/anchors.py --sizes 1M --iters 20 > $L/anchors.log 2>&1; tail -3 $L/anchors.log
date
