#!/bin/bash
# GPU run 19c (one H200): probe, not a build of main: perf_q is run 19b's probe plus two switches
# (the change: perf_q.diff). EXP_KCOPY_OUT / EXP_KCOPY_IN: the staged ring's CUDA end copies each
# chunk by a copy kernel (the SMs writing or reading the pinned ring over PCIe) instead of the copy
# engine. EXP_REUSE_MIN=0: CUDA allocations of every size are parked for reuse (1 MiB and up
# otherwise). Host-staged 1 GiB broadcasts between cuda:0 and vulkan:0 of one GPU, each
# combination of the Vulkan queue family (COLLECTIVES_VK_FAMILY) and the CUDA end's copier; the
# 4 KiB fixed-cost rows with and without parking small allocations. Two rounds.
# Invoked as: timeout -k 5 330 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
p() { local tag=$1; shift; timeout 60 $G/perf_q "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error' $L/$tag.log; }
for r in 1 2; do
  for f in 0 1; do
    export COLLECTIVES_BRIDGE=host COLLECTIVES_VK_FAMILY=$f
    p cv_f${f}_$r --op broadcast --devices cuda:0,vulkan:0 --sizes 1G --iters 5 --warmup 2
    EXP_KCOPY_OUT=1 p cv_f${f}_k_$r --op broadcast --devices cuda:0,vulkan:0 --sizes 1G --iters 5 --warmup 2
    p vc_f${f}_$r --op broadcast --devices vulkan:0,cuda:0 --sizes 1G --iters 5 --warmup 2
    EXP_KCOPY_IN=1 p vc_f${f}_k_$r --op broadcast --devices vulkan:0,cuda:0 --sizes 1G --iters 5 --warmup 2
  done
  unset COLLECTIVES_BRIDGE COLLECTIVES_VK_FAMILY
  for m in 1048576 0; do
    export EXP_REUSE_MIN=$m
    p lr_m${m}_$r --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
    p ch_m${m}_$r --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
    COLLECTIVES_CUDA_DEVICES=0,0 p cc_m${m}_$r --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 500 --warmup 50
    p cv_m${m}_$r --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K --iters 500 --warmup 50
  done
  unset EXP_REUSE_MIN
done
date
