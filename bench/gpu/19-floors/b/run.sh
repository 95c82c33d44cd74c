#!/bin/bash
# GPU run 19b (one H200): probe, not a build of main: perf_q is main (9502b60) plus one line
# letting COLLECTIVES_VK_FAMILY pick the Vulkan device's queue family (0 = graphics+compute, the
# default; 1 = transfer only; 2 = compute only on this driver), to see whether the host-staged
# moves between cuda:0 and vulkan:0 of one GPU lose their bandwidth to the queue the Vulkan copies
# run on. Two rounds, 1 GiB broadcasts. The change: perf_q.diff.
# Invoked as: timeout -k 5 300 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
p() { local tag=$1; shift; timeout 60 $G/perf_q "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error' $L/$tag.log; }
COLLECTIVES_VK_FAMILY=0 $G/perf_q --op broadcast --devices cpu:0,vulkan:0 --sizes 4K --iters 1 --warmup 0 2>&1 | grep EXP
for r in 1 2; do for f in 0 1 2; do
  export COLLECTIVES_VK_FAMILY=$f
  COLLECTIVES_BRIDGE=host p hs_cv_f${f}_$r --op broadcast --devices cuda:0,vulkan:0 --sizes 1G --iters 5 --warmup 2
  COLLECTIVES_BRIDGE=host p hs_vc_f${f}_$r --op broadcast --devices vulkan:0,cuda:0 --sizes 1G --iters 5 --warmup 2
done; done
for f in 0 1 2; do export COLLECTIVES_VK_FAMILY=$f
  p up_v_f$f --op broadcast --devices cpu:0,vulkan:0 --sizes 1G --iters 5 --warmup 2
  p down_v_f$f --op broadcast --devices vulkan:0,cpu:0 --sizes 1G --iters 5 --warmup 2
done
date
