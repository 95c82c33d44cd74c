#!/bin/bash
# Run 58b: on run 58a's lease and binaries, right after it: issue 14's 4 KiB CUDA rows with graphs
# off (=0) and on (=1) in turn, eight more rounds; anchors.
# Staged by: run 58a's staging (the same .gpu/)
# Invoked as: G=.gpu; test -x $G/lib || tar xJf $G/bins.tar.xz -C $G; source $G/env.sh && source $G/steps.sh; I="--sizes 4K --iters 1000 --warmup 100"; for r in 1 2 3 4 5 6 7 8; do for g in 0 1; do export COLLECTIVES_CUDA_GRAPH_LAUNCH=$g; p lr_g${g}_$r perf --op local_reduce --devices cuda:0 $I; p ch_g${g}_$r perf --op all_reduce --devices cuda:0,cpu:0 $I; COLLECTIVES_CUDA_DEVICES=0,0 p v2_g${g}_$r perf --op all_reduce --devices cuda:0,cuda:1 $I; done; done 2>&1 | tee $OUT/summary.txt; timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 2>&1 | tail -2 | tee -a $OUT/summary.txt
# (The per-step logs were not packed, and too many to come back: summary.txt holds every row.)
