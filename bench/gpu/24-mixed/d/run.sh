#!/bin/bash
# GPU run 24d (one H200): the reduce kernel reaching its inputs through unrolled loops predicated
# on the count (every input's load issued before the fold) where it indexed the pointer array at
# run time, on top of 4c7c54a. Tests: lib (the kernel tests, every op and dtype), cuda_native on 8
# virtual CUDA devices, device_groups, cuda_ops; the probes. perf_c (run 24c's binary, a2a87e5)
# against perf, two interleaved rounds: local_reduce at 4 KiB and 16 MiB, the 4 KiB all_reduce
# of cuda:0,cpu:0 and of 2 virtual CUDA devices, the star of 8 at 4 KiB and the one-shot of 8 at
# 1 and 4 MiB; anchors.py in the same command.
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 150 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native8 cuda_native 150 --test-threads 2
t groups device_groups 150 --test-threads 2
t ops cuda_ops 100 --test-threads 2
grep -h -E "panicked|FAILED|total:" $L/t_*.log | head -20
t probe probe 90 --ignored --test-threads 1 --nocapture backend::cuda::probe::
grep -o "probe:.*" $L/t_probe.log
p() { local tag=$1 b=$2; shift 2; timeout 90 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
D8=cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7
for r in 1 2; do
  for b in perf_c perf; do
    p ${b}_lr_$r $b --op local_reduce --devices cuda:0,cpu:0 --sizes 4K,16M --iters 200 --warmup 20
    p ${b}_ch_$r $b --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
    COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_cc_$r $b --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 500 --warmup 50
    COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 p ${b}_st8_$r $b --op all_reduce --devices $D8 --sizes 4K --iters 200 --warmup 20
    COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 p ${b}_os8_$r $b --op all_reduce --devices $D8 --algo oneshot --sizes 1M,4M --iters 50 --warmup 5
  done
done
timeout 60 python3 $G/anchors.py --sizes 4K,1M --iters 20 > $L/anchors.log 2>&1; tail -4 $L/anchors.log
date
