#!/bin/bash
# GPU run B1: the perf tool on cuda:0,cuda:1 (NCCL, star, ring) and anchors.py in one command.
G=.gpu
source $G/env.sh
P="--dtype f32,bf16 --algo nccl,star,ring --iters 10 --warmup 3"
s=$(date +%s)
timeout 200 $G/perf --op all_reduce,broadcast --devices cuda:0,cuda:1 --sizes 1M..1G:4 $P --json $OUT/perf_ar_bc.json > $OUT/perf.log 2>&1; echo "perf ar/bc rc=$? $(( $(date +%s)-s ))s"
# all_gather / reduce_scatter sizes are totals (nccl-tests); 2M..2G total = anchors' 1M..1G per device.
timeout 200 $G/perf --op all_gather,reduce_scatter --devices cuda:0,cuda:1 --sizes 2M..2G:4 $P --json $OUT/perf_ag_rs.json >> $OUT/perf.log 2>&1; echo "perf ag/rs rc=$? $(( $(date +%s)-s ))s"
timeout 180 python3 $G/anchors.py --sizes 1M,4M,16M,64M,256M,1G --iters 10 --json $OUT/anchors.json > $OUT/anchors.log 2>&1; echo "anchors rc=$? $(( $(date +%s)-s ))s"
