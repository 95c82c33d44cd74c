#!/bin/bash
# Run b (2026-12-05, the same lease as a): the star all_to_all on two virtual devices of one GPU,
# now Auto's choice there below ONE_GPU_STAR_MAX_BYTES (run a measured it 1.3-1.4 x faster up to
# 4 MiB); issue 14's 4 KiB rows again, with the all_reduce of cuda:0,cpu:0; the choice's tests:
# lib's algo test, plans on two and three virtual devices, cuda_native on two and three (the
# automatic choice printed); anchors.py in the same command.
# Staged: the lib, plans and cuda_native test binaries (dev, --features slow,failpoints) and the
# release perf of the tree with the change, stripped, in .gpu/bins.tar.xz; env.sh, steps.sh,
# anchors.py beside.
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
export REQUIRE_CUDA=1
COLLECTIVES_CUDA_DEVICES=0,0 p a2a_2 perf --op all_to_all --devices cuda:0,cuda:1 --sizes 4K,1M,4M,16M,256M --algo auto,star,oneshot --iters 20 --warmup 3
COLLECTIVES_CUDA_DEVICES=0,0 p a2a_2r perf --op all_to_all --devices cuda:0,cuda:1 --sizes 4K,1M --algo auto,oneshot,auto,oneshot --iters 200 --warmup 20
for r in 1 2; do
p lr_$r perf --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
p ch_$r perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
COLLECTIVES_CUDA_DEVICES=0,0 p cc_$r perf --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 2000 --warmup 100
p c8_$r perf --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 --sizes 4K --iters 2000 --warmup 100
done
timeout 40 python3 $G/anchors.py --sizes 1M --iters 10 > $L/anchors.log 2>&1; tail -1 $L/anchors.log
t algo lib 60 --test-threads 4 collective::algo
COLLECTIVES_CUDA_DEVICES=0,0 t plans2 plans 30
COLLECTIVES_CUDA_DEVICES=0,0,0 t plans3 plans 30
COLLECTIVES_CUDA_DEVICES=0,0 t native_2 cuda_native 60 --test-threads 2 --show-output
grep -h "devices, AllToAll" $L/t_native_2.log | sort -u | tr '\n' ' '; echo
COLLECTIVES_CUDA_DEVICES=0,0,0 t native_3 cuda_native 60 --test-threads 2 --show-output
grep -h "devices, AllToAll" $L/t_native_3.log | sort -u | tr '\n' ' '; echo
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
