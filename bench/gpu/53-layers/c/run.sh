#!/bin/bash
# Run 53c, a short call on what device time was left: run a's PyTorch script with the import it
# lacked (`torch.cuda.comm`) and each row's error reported (c/torch_local.py, copied to .gpu/),
# two rounds, beside the library's `local_reduce` on `cuda:0` and `cuda:0,cpu:0` all_reduce
# (c0eb32f, run a's `perf`) at 64 B, 256 B and 4 KiB, two rounds, and anchors at 4 KiB.
# Staged by: run a's staging, with this file copied to .gpu/run_c.sh and c/torch_local.py to .gpu/
# Invoked as: timeout -k 5 120 bash .gpu/run_c.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G ./perf && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in 1 2; do
  p lr_$r perf --op local_reduce --devices cuda:0 --sizes 4K --iters 1000 --warmup 100
  p ch_$r perf --op all_reduce --devices cuda:0,cpu:0 --sizes 64,256,4K --iters 1000 --warmup 100
done
timeout 60 python3 $G/torch_local.py > $L/torch_local.log 2>&1; grep -h -E "torch:|Error" $L/torch_local.log
timeout 30 python3 $G/anchors.py --sizes 4K --iters 10 > $L/anchors.log 2>&1; tail -1 $L/anchors.log
date
