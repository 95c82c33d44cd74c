#!/bin/bash
# GPU run 22e (one H200): main with ALL_GATHER_IN_PLACE_MIN_BYTES at 8 MiB per shard. The joins
# test (the pair's all_gather at the threshold, planned as the one-shot, every element), and the
# all_gather of cuda:0,cpu:0 with Auto at 1, 16 and 256 MiB gathered (512 KiB, 8 and 128 MiB
# shards); anchors.py in the same command.
# Invoked as: timeout -k 5 150 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 60 $G/joins > $L/t_joins.log 2>&1; echo "joins rc=$? $(grep -E '^test result' $L/t_joins.log)"
for r in 1 2; do
  timeout 40 $G/perf --op all_gather --devices cuda:0,cpu:0 --sizes 1M,16M,256M --iters 20 --warmup 3 --json $L/ag_$r.json > $L/ag_$r.log 2>&1
  echo "ag_$r rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/ag_$r.log
done
timeout 60 python3 $G/anchors.py --sizes 1M,16M,1G --iters 10 > $L/anchors.log 2>&1; tail -4 $L/anchors.log
date
