#!/bin/bash
# Run 54d: where an issued 4 KiB call's host time goes (runs a and c: `local_reduce` on `cuda:0`
# 7.4-8.3 us a call with 2 to 16 in flight, the host's issuing, not the GPU, bounding the loop):
# host profiles (`perf --profile`, pprof) of `local_reduce` on `cuda:0` and the `cuda:0,cpu:0`
# all_reduce with 8 in flight; and realize's rows again, df2eba7 (perf: realize waits again only
# for targets realized before the call) against 8287f18 (perf_old), three interleaved rounds;
# anchors; 5a24685's `issued` test (every chain also by the ring) on two virtual CUDA devices.
# Staged by: df2eba7's release perf, stripped (perf) and built with `--features profile`, not
#   stripped (perf_prof), run a's perf_old, and 5a24685's `issued` test binary (stripped), in
#   .gpu/bins_d.tar.xz; this file as .gpu/run_d.sh
# Invoked as: timeout -k 5 170 bash .gpu/run_d.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins_d.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
REQUIRE_CUDA=1 REQUIRE_VULKAN=1 COLLECTIVES_CUDA_DEVICES=0,0 t issued2 issued 120
p prof_lr perf_prof --op local_reduce --devices cuda:0 --sizes 4K --iters 400000 --warmup 1000 --in-flight 8 --no-check --profile $L/prof_lr
p prof_ch perf_prof --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 300000 --warmup 1000 --in-flight 8 --no-check --profile $L/prof_ch
for f in prof_lr prof_ch; do echo "== $f"; sed -n '/by own samples/,/^$/p' $L/$f/*.txt | head -25; done
I="--sizes 4K --iters 1000 --warmup 100"
for r in 1 2 3; do
  for b in perf_old perf; do
    p lr_${b}_$r $b --op local_reduce --devices cuda:0 $I
    p ch_${b}_$r $b --op all_reduce --devices cuda:0,cpu:0 $I
    p c8_${b}_$r $b --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 $I
  done
  p lr_f8_$r perf --op local_reduce --devices cuda:0 $I --in-flight 8
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
