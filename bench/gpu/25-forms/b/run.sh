#!/bin/bash
# GPU run 25b (one H200): the reduce kernel loading its inputs in batches of 4 from 1 MiB per
# input (the loop below), chosen from run a's probe, on top of 5eb4615. Tests: lib (every form,
# dtype, op and count against the loop's bits and f64; run a's u8 inputs wrapped the sum of 17,
# which the f64 reference does not), cuda_native on 8 virtual CUDA devices by default and with
# every launch forced to batches of 4, device_groups forced likewise (host shards read in place),
# cuda_ops. perf_base (5eb4615) against perf, two interleaved rounds: local_reduce, the one-shot
# and two-shot all_reduce of 8 virtual devices, the all_reduce of 2 and of cuda:0,cpu:0, f32 and
# bf16; anchors.py in the same command.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
V8=0,0,0,0,0,0,0,0
t lib lib 200 --test-threads 4
COLLECTIVES_CUDA_DEVICES=$V8 t native8 cuda_native 120 --test-threads 2
COLLECTIVES_REDUCE_BATCH=4 COLLECTIVES_CUDA_DEVICES=$V8 t native8_b4 cuda_native 120 --test-threads 2
COLLECTIVES_REDUCE_BATCH=4 t groups_b4 device_groups 150 --test-threads 2
t ops cuda_ops 100 --test-threads 2
grep -h -E "panicked|FAILED|warning" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 90 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
D8=cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7
for r in 1 2; do
  for b in perf_base perf; do
    p ${b}_lr_$r $b --op local_reduce --devices cuda:0,cpu:0 --sizes 4K,1M,16M,64M -d f32,bf16 --iters 50 --warmup 5
    COLLECTIVES_CUDA_DEVICES=$V8 p ${b}_os8_$r $b --op all_reduce --devices $D8 --algo oneshot --sizes 1M,4M,8M,16M -d f32,bf16 --iters 20 --warmup 3
    COLLECTIVES_CUDA_DEVICES=$V8 p ${b}_ts8_$r $b --op all_reduce --devices $D8 --algo twoshot --sizes 4M,8M,16M,64M,256M --iters 10 --warmup 2
    COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_cc_$r $b --op all_reduce --devices cuda:0,cuda:1 --sizes 4K,4M,64M --iters 20 --warmup 3
    p ${b}_ch_$r $b --op all_reduce --devices cuda:0,cpu:0 --sizes 4K,64M --iters 10 --warmup 2
  done
done
timeout 60 python3 $G/anchors.py --sizes 1M,64M --iters 20 > $L/anchors.log 2>&1; tail -4 $L/anchors.log
date
