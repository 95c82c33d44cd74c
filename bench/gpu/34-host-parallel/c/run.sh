#!/bin/bash
# Run c: the same binaries as run b (726ac27). vulkan_ops again with the time it needs (run b gave
# it 40 s; runs 10b and 16b 150-200 s); then why the all_to_all of cuda:0,vulkan:0 (one H200 seen
# by both APIs) takes 360 us at 1 MiB where its all_gather takes 31 (run b), and why the
# reduce_scatter and all_to_all of cuda:0,cpu:0 at 256 MiB take 7.5 and 6.8 ms where the
# all_reduce, moving twice the bytes, takes 5.7: the realize's step log (COLLECTIVES_LOG=debug,
# a few iterations), and the all_to_all by size with the staged chain on and off.
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
CV=cuda:0,vulkan:0; CC=cuda:0,cpu:0
p cv_a2a perf --op all_to_all,all_gather --devices $CV --sizes 64K,256K,512K,1M,2M,4M,16M --iters 10 --warmup 2
COLLECTIVES_STAGED_CHAIN=0 p cv_a2a_nochain perf --op all_to_all --devices $CV --sizes 64K,256K,1M,4M,16M --iters 10 --warmup 2
COLLECTIVES_LOG=debug timeout 60 $G/perf --op all_to_all --devices $CV --sizes 4K,1M,16M --iters 2 --warmup 1 > $L/cv_debug.log 2>&1; echo "cv_debug rc=$?"
COLLECTIVES_LOG=debug timeout 60 $G/perf --op all_gather --devices $CV --sizes 1M --iters 2 --warmup 1 > $L/cv_ag_debug.log 2>&1; echo "cv_ag_debug rc=$?"
p cc_big perf --op all_reduce,reduce_scatter,all_to_all,all_gather --devices $CC --sizes 16M,64M,256M --iters 5 --warmup 1
COLLECTIVES_LOG=debug timeout 60 $G/perf --op reduce_scatter,all_to_all --devices $CC --sizes 256M --iters 2 --warmup 1 > $L/cc_debug.log 2>&1; echo "cc_debug rc=$?"
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t vulkan_ops vulkan_ops 200 --test-threads 4
date
