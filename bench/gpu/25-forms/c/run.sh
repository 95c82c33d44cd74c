#!/bin/bash
# GPU run 25c (one H200): two questions run b left, on ea647a9 (+ the forms probe measuring bf16
# too): why bf16's 64 MiB local_reduce did not gain where f16's kernel did (the probe by dtype;
# local_reduce f16 and bf16 with every launch forced to the loop, 0, and to batches of 4), and
# whether batches help a kernel reading a host shard in place below 1 MiB (the all_reduce of
# cuda:0,cpu:0 and of cuda:0,cpu:0..2 at 64-512 KiB, forced 0 against 4). Two interleaved rounds;
# anchors.py in the same command.
# Invoked as: timeout -k 5 300 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t probe probe 90 --ignored --exact --test-threads 1 --nocapture backend::cuda::probe::reduce_forms_probe
grep -o "probe:.*" $L/t_probe.log
p() { local tag=$1 b=$2; shift 2; timeout 90 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2; do
  for f in 0 4; do
    export COLLECTIVES_REDUCE_BATCH=$f
    p b${f}_lr_$r perf --op local_reduce --devices cuda:0,cpu:0 --sizes 16M,64M -d f16,bf16 --iters 50 --warmup 5
    p b${f}_ch_$r perf --op all_reduce --devices cuda:0,cpu:0 --sizes 64K,256K,512K --iters 200 --warmup 20
    p b${f}_ch3_$r perf --op all_reduce --devices cuda:0,cpu:0,cpu:1,cpu:2 --sizes 256K --iters 200 --warmup 20
  done
done
unset COLLECTIVES_REDUCE_BATCH
timeout 60 python3 $G/anchors.py --sizes 256K,64M --iters 20 > $L/anchors.log 2>&1; tail -4 $L/anchors.log
date
