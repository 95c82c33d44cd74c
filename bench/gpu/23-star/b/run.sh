#!/bin/bash
# GPU run 23b (one H200): the star all_reduce of CUDA devices as one launch (the leader's reduce
# writes every member's output), the small streamed kernel's reduce writing its host copies in its
# own pass, on top of 8718ef9. Tests (lib with the multi-output kernel test; cuda_native on 8
# virtual CUDA devices with the star; device_groups; the fault sweep on two virtual CUDA devices;
# joins; typed; plans), the probe, then perf_base (8718ef9) against perf in interleaved rounds at
# 4 KiB, the star against the one-shot from 4 KiB to 16 MiB on 2, 4 and 8 virtual CUDA devices,
# and anchors.py in the same command.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 120 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native8 cuda_native 150 --test-threads 2 --nocapture
t groups device_groups 150 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100 --nocapture
COLLECTIVES_CUDA_DEVICES=0,0 t joins2 joins 60
t typed typed 60
COLLECTIVES_CUDA_DEVICES=0,0,0 t plans plans 60
grep -h -E "panicked|FAILED|total:" $L/t_*.log | head -20
t probe probe 60 --ignored --exact backend::cuda::probe::local_reduce_layers_probe --nocapture
grep -h "^probe:" $L/t_probe.log
p() { local tag=$1 b=$2; shift 2; timeout 90 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2; do
  for b in perf_base perf; do
    p ${b}_lr_$r $b --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
    p ${b}_ch_$r $b --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
    p ${b}_cvh_$r $b --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 4K --iters 500 --warmup 50
    COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_cc_$r $b --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 500 --warmup 50
  done
done
for r in 1 2; do
  for n in 2 4 8; do
    devs=$(seq -s, -f 'cuda:%g' 0 $((n-1)))
    COLLECTIVES_CUDA_DEVICES=$(printf '0%.0s,' $(seq $n) | sed 's/,$//') p sweep${n}_$r perf --op all_reduce --devices $devs --algo star,oneshot --sizes 4K,64K,256K,1M,4M,16M --iters 50 --warmup 5
  done
done
timeout 120 python3 $G/anchors.py --sizes 4K,1M,256M --iters 20 > $L/anchors.log 2>&1; tail -4 $L/anchors.log
date
