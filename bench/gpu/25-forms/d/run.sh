#!/bin/bash
# GPU run 25d (one H200): the rule after run c — batches of 2 for bf16 (4 for the rest) from
# 1 MiB per input, and batches at any size where a kernel reads or writes host memory in place
# (the one-pass kernel of a CUDA device and host shards). The forms probe for every dtype (2, 3
# and 8 inputs); tests: lib; perf_base (5eb4615) against perf, two interleaved
# rounds: local_reduce f16/bf16, the one-shot of 8 virtual devices in bf16, the all_reduce of
# cuda:0,cpu:0 at 64-512 KiB in f32 and bf16; anchors.py in the same command.
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t probe probe 120 --ignored --exact --test-threads 1 --nocapture backend::cuda::probe::reduce_forms_probe
grep -o "probe:.*" $L/t_probe.log
t lib lib 150 --test-threads 4
grep -h -E "panicked|FAILED|warning" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 90 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
D8=cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7
for r in 1 2; do
  for b in perf_base perf; do
    p ${b}_lr_$r $b --op local_reduce --devices cuda:0,cpu:0 --sizes 4M,16M,64M -d f16,bf16 --iters 50 --warmup 5
    COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 p ${b}_os8_$r $b --op all_reduce --devices $D8 --algo oneshot --sizes 4M,16M -d bf16 --iters 20 --warmup 3
    p ${b}_ch_$r $b --op all_reduce --devices cuda:0,cpu:0 --sizes 64K,256K,512K -d f32,bf16 --iters 200 --warmup 20
  done
done
timeout 60 python3 $G/anchors.py --sizes 256K,64M --iters 20 > $L/anchors.log 2>&1; tail -4 $L/anchors.log
date
