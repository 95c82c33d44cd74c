#!/bin/bash
# GPU run 13e (the H200 host's 16 cores, the GPU unused): the final change (perf: host star
# all_reduce, all_gather and reduce_scatter as one call each) against df0f592 (perf_old) and
# main 02664b0 (perf_base), nine interleaved rounds: every CPU collective on cpu:0..3, and the
# 4 KiB fixed cost on cpu:0..7. Rounds 1-5 unpinned; rounds 6-9 pinned to cores 0-7
# (taskset), to see whether the two-mode spread of run 13d is thread placement.
# Invoked as: timeout -k 5 570 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
L=$OUT/logs; mkdir -p $L
nproc; uptime; lscpu | grep -E "Model name|NUMA node"
C8=cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7
C4=cpu:0,cpu:1,cpu:2,cpu:3
OPS=all_reduce,reduce,broadcast,all_gather,reduce_scatter
for r in 1 2 3 4 5 6 7 8 9; do
  pin=""; [ $r -ge 6 ] && pin="taskset -c 0-7"
  for b in perf_old perf_base perf; do
    timeout 100 $pin $G/$b --op $OPS --devices $C4 --sizes 4K..64M:4 --iters 60 --warmup 10 --json $L/${b}_c4_$r.json > $L/${b}_c4_$r.log 2>&1; echo "$b c4 $r rc=$?"
    timeout 60 $pin $G/$b --op all_reduce,all_gather,reduce_scatter --devices $C8 --sizes 4K --iters 500 --warmup 50 --json $L/${b}_c8_$r.json > $L/${b}_c8_$r.log 2>&1; echo "$b c8 $r rc=$?"
  done
done
