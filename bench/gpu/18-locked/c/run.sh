#!/bin/bash
# GPU run 18c (one H200): host profiles of the 4 KiB calls of `cuda:0,cpu:0` with run 18b's binary
# (the one-pass kernel downloading by the copy engine). Output: summary.txt; prof/ is $OUT/prof.
# Invoked as (the whole command of the device call):
source .gpu/env.sh; mkdir -p $OUT/prof; for op in all_reduce reduce local_reduce; do timeout 60 .gpu/perf --op $op --devices cuda:0,cpu:0 --sizes 4K --iters 20000 --warmup 100 --profile $OUT/prof 2>&1 | grep -E "^ +[a-z_]+ +[0-9]"; done; ls $OUT/prof
