#!/bin/bash
# GPU run 18f (one H200): debug timelines of the 4 KiB and 1 MiB reduce_scatter and all_reduce of
# cuda:0,cpu:0 with COLLECTIVES_STREAM=0 and 1 (run e's binary), then both rows again.
# Output: summary.txt; logs/ is $L.
# Invoked as (the whole command of the device call):
source .gpu/env.sh; for s in 0 1; do for op in reduce_scatter all_reduce; do COLLECTIVES_STREAM=$s COLLECTIVES_LOG=debug timeout 60 .gpu/perf --op $op --devices cuda:0,cpu:0 --sizes 4K,1M --iters 3 --warmup 3 > $L/tl_${op}_s$s.log 2>&1; echo "$op s$s rc=$?"; done; done; for s in 0 1; do COLLECTIVES_STREAM=$s timeout 60 .gpu/perf --op reduce_scatter,all_reduce --devices cuda:0,cpu:0 --sizes 4K,1M --iters 300 --warmup 30 2>&1 | grep -E "^ +[a-z_]+ +[0-9]"; done
