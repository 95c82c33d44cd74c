#!/bin/bash
# GPU run 13d (the H200 host's 16 cores, the GPU unused): the final change (perf: host star
# all_reduce and all_gather as one call each) against main 02664b0 (perf_base) and df0f592
# (perf_old), seven interleaved rounds: the fixed cost on cpu:0..7, and all_gather /
# reduce_scatter on cpu:0..3 (issue 13's bound).
# Invoked as: timeout -k 5 570 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
L=$OUT/logs; mkdir -p $L
nproc; uptime
C8=cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7
C4=cpu:0,cpu:1,cpu:2,cpu:3
for r in 1 2 3 4 5 6 7; do
  for b in perf_old perf_base perf; do
    timeout 60 $G/$b --op all_reduce,all_gather --devices $C8 --sizes 4K,64K,1M --iters 300 --warmup 30 --json $L/${b}_c8_$r.json > $L/${b}_c8_$r.log 2>&1; echo "$b c8 $r rc=$?"
    timeout 100 $G/$b --op all_gather,reduce_scatter --devices $C4 --sizes 4K..64M:4 --iters 60 --warmup 10 --json $L/${b}_c4_$r.json > $L/${b}_c4_$r.log 2>&1; echo "$b c4 $r rc=$?"
  done
done
