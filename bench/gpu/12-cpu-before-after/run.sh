#!/bin/bash
# GPU run 12 (the H200 host's 16 cores, the GPU unused): CPU all_reduce before (df0f592, perf_old)
# and after (this main, perf), star and ring on cpu:0..3, five interleaved rounds of -n 60.
# Invoked as: timeout -k 5 500 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
L=$OUT/logs; mkdir -p $L
nproc; uptime
S=4K,64K,1M,16M,64M
for r in 1 2 3 4 5; do
  for a in star ring; do
    timeout 100 $G/perf_old --op all_reduce --algo $a --devices cpu:0,cpu:1,cpu:2,cpu:3 --sizes $S --iters 60 --warmup 10 --json $L/old_${a}_$r.json > $L/old_${a}_$r.log 2>&1; echo "old $a $r rc=$?"
    timeout 100 $G/perf --op all_reduce --algo $a --devices cpu:0,cpu:1,cpu:2,cpu:3 --sizes $S --iters 60 --warmup 10 --json $L/new_${a}_$r.json > $L/new_${a}_$r.log 2>&1; echo "new $a $r rc=$?"
  done
done
