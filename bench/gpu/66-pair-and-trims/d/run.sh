#!/bin/bash
# Run 66d: run c found a process's level below the library (the driver's memset and synchronize
# 6.1-6.3 us in some processes, 6.7-6.9 in others, every layer above moving with it). Is it the
# stream's? The streams probe in twelve processes one after another: the same memset and
# synchronize on the compute stream, on eight new streams and on one of the greatest priority, in
# turn. If streams of one process read both levels, the level is the stream's.
# Staged by: bash bench/gpu/stage.sh bench/gpu/66-pair-and-trims/d - lib
# Invoked as: timeout -k 5 200 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1
echo "process: compute stream, new streams 1-8, greatest priority (medians, us)"
for i in $(seq 1 12); do
  timeout 60 $G/lib --ignored --nocapture --exact backend::cuda::probe::stream_levels_probe \
    > $L/streams_$i.log 2>&1
  echo "$i: $(grep -E '^probe' $L/streams_$i.log | awk '{printf "%s ", $2}')$(grep -c panicked $L/streams_$i.log) panics"
done
grep -h -m1 "priority" $L/streams_1.log
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
