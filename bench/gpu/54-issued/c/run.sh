#!/bin/bash
# Run 54c, on run a's and b's lease right after them: the issued loop's depth (`--in-flight` 2, 4,
# 16 and 32) for run a's three 4 KiB rows, two rounds, and `local_reduce` at 1 MiB and 64 MiB
# realized and with 8 in flight; anchors. A first try of this command (without the `tar` that
# unpacks perf: a call re-sends .gpu, so what run a unpacked was gone) ran nothing (rc 127).
# Staged by: run a's staging (16962f6's perf)
# Invoked as: G=.gpu; tar xJf $G/bins.tar.xz -C $G ./perf; source $G/env.sh; source $G/steps.sh; I="--sizes 4K --iters 2000 --warmup 200"; for r in 1 2; do for f in 2 4 16 32; do p lr_f${f}_$r perf --op local_reduce --devices cuda:0 $I --in-flight $f; p ch_f${f}_$r perf --op all_reduce --devices cuda:0,cpu:0 $I --in-flight $f; COLLECTIVES_CUDA_DEVICES=0,0 p v2_f${f}_$r perf --op all_reduce --devices cuda:0,cuda:1 $I --in-flight $f; done; p lr1m_f0_$r perf --op local_reduce --devices cuda:0 --sizes 1M,64M --iters 200 --warmup 20; p lr1m_f8_$r perf --op local_reduce --devices cuda:0 --sizes 1M,64M --iters 200 --warmup 20 --in-flight 8; done 2>&1 | tee $OUT/summary.txt; timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 2>&1 | tail -2 | tee -a $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
