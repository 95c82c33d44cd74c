#!/bin/bash
# Run 40c: run b's binaries again (ff87ad3 `perf`, bd71b4b `perf_a`, 51e1def `perf_old`), the
# reduce_scatter rows only, three rounds with the binaries' order rotated (run b's first round
# read high on some rows), then the anchors.
# Staged by: run b's .gpu with this run.sh copied over .gpu/run.sh.
# Invoked as: timeout -k 5 300 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
order=(perf perf_a perf_old)
for r in 1 2 3; do
  for i in 0 1 2; do
    b=${order[$(( (i + r) % 3 ))]}
    for d in cuda:0,cpu:0 cuda:0,cpu:0,cpu:1,cpu:2; do
      p rs_${b}_${r}_${d//[:,]/_} $b --op reduce_scatter --devices $d --sizes 4K,64K,256K,512K --iters 200 --warmup 20
    done
  done
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
