#!/bin/bash
# GPU run 18d (one H200): the one-pass kernel's download by the copy engine (0) against a copy
# kernel writing the pinned block across the bus (1), in one binary (a temporary switch,
# COLLECTIVES_ONE_PASS_KERNEL_COPY, read in backend/cuda/mapped.rs; removed after this run, the
# copy kernel kept), three interleaved rounds. Output: summary.txt; logs/ is $L.
# Invoked as (the whole command of the device call):
source .gpu/env.sh; for r in 1 2 3; do for k in 0 1; do echo "kernel_copy=$k round $r"; COLLECTIVES_ONE_PASS_KERNEL_COPY=$k timeout 60 .gpu/perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K,64K,256K,1M --iters 200 --warmup 20 --json $L/kc${k}_$r.json 2>&1 | grep -E "^ +[a-z_]+ +[0-9]"; COLLECTIVES_ONE_PASS_KERNEL_COPY=$k timeout 60 .gpu/perf --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 4K --iters 200 --warmup 20 2>&1 | grep -E "^ +[a-z_]+ +[0-9]"; done; done
