#!/bin/bash
# GPU run 13c (the H200 host's 16 cores, the GPU unused): every CPU collective on cpu:0..3
# before (perf_old: df0f592, before wave 2) and after (perf: this change), nine interleaved
# rounds, for issue 13's 3 % bound; then the ring all_reduce alone, nine rounds.
# Invoked as: timeout -k 5 570 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
L=$OUT/logs; mkdir -p $L
nproc; uptime
C4=cpu:0,cpu:1,cpu:2,cpu:3
OPS=all_reduce,reduce,broadcast,all_gather,reduce_scatter
for r in 1 2 3 4 5 6 7 8 9; do
  for b in perf_old perf; do
    timeout 100 $G/$b --op $OPS --devices $C4 --sizes 4K..64M:4 --iters 60 --warmup 10 --json $L/${b}_ops_$r.json > $L/${b}_ops_$r.log 2>&1; echo "$b ops $r rc=$?"
    timeout 100 $G/$b --op all_reduce --algo ring --devices $C4 --sizes 4K..64M:4 --iters 60 --warmup 10 --json $L/${b}_ring_$r.json > $L/${b}_ring_$r.log 2>&1; echo "$b ring $r rc=$?"
  done
done
