#!/bin/bash
# GPU run 25e (one H200): the batch by dtype from run d's probe (4 for f32, f16, i64; 2 for f64,
# bf16, i32; 1 for u8), and the question runs c and d disagreed on: whether the one-pass kernel
# reading a host shard in place (cuda:0,cpu:0 below 1 MiB) gains from batches. The same perf
# binary with COLLECTIVES_REDUCE_BATCH unset (batches there) and =0 (the loop), three
# interleaved rounds; perf_base (5eb4615) against perf on local_reduce u8, i32 and f64, two
# rounds; anchors.py in the same command.
# Invoked as: timeout -k 5 150 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
p() { local tag=$1 b=$2; shift 2; timeout 40 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2 3; do
  for f in unset 0; do
    if [ $f = 0 ]; then export COLLECTIVES_REDUCE_BATCH=0; else unset COLLECTIVES_REDUCE_BATCH; fi
    p ${f}_ch_$r perf --op all_reduce --devices cuda:0,cpu:0 --sizes 64K,256K,512K -d f32,bf16 --iters 300 --warmup 30
  done
done
unset COLLECTIVES_REDUCE_BATCH
for r in 1 2; do
  for b in perf_base perf; do
    p ${b}_lr_$r $b --op local_reduce --devices cuda:0,cpu:0 --sizes 4M,64M -d u8,i32,f64 --iters 50 --warmup 5
  done
done
timeout 40 python3 $G/anchors.py --sizes 256K,64M --iters 20 > $L/anchors.log 2>&1; tail -3 $L/anchors.log
date
