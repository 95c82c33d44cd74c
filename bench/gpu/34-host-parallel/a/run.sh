#!/bin/bash
# On one H200's host (16 cores): where the host all_to_all should run its members side by side.
# `perf` is 17945ec's release perf (members one after another below 16 MiB of outputs,
# PAR_MIN_BYTES, set on the 2-core development machine); `perf_par` the same tree with
# PAR_MIN_BYTES = 0 (always side by side); two interleaved rounds on eight and four host devices.
# Then every host collective of cpu:0..7 from 64 KiB to 64 MiB (a sequential cliff like
# all_to_all's would show), the all_reduce with its memcpy floor (issue 14: <= 1.0 x the floor
# from 16 MiB); issue 14's 4 KiB rows in three rounds, a host profile of the cuda:0,cpu:0
# all_reduce (perf_prof: --features profile, symbols kept); anchors.py in the same command.
# Invoked as: timeout -k 5 590 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
C8=cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7; C4=cpu:0,cpu:1,cpu:2,cpu:3
for r in 1 2; do for b in perf perf_par; do
p a8_${b}_$r $b --op all_to_all --devices $C8 --sizes 16K,64K,256K,1M,4M,16M --iters 40 --warmup 4
p a4_${b}_$r $b --op all_to_all --devices $C4 --sizes 16K,64K,256K,1M,4M,16M --iters 40 --warmup 4
done; done
p h8 perf --op all_gather,reduce_scatter,broadcast,reduce,gather,scatter --devices $C8 --sizes 64K..64M:4 --iters 20 --warmup 3
p f8 perf --op all_reduce --devices $C8 --sizes 64K..256M:4 --iters 20 --warmup 3 --floor
grep -E "floor|memcpy" $L/f8.log | head -12
for r in 1 2 3; do
p lr_$r perf --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
p ch_$r perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
COLLECTIVES_CUDA_DEVICES=0,0 p cc_$r perf --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 2000 --warmup 100
p c8_$r perf --op all_reduce --devices $C8 --sizes 4K --iters 2000 --warmup 100
done
p chprof perf_prof --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 100000 --warmup 1000 --profile $L/prof_ch
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
