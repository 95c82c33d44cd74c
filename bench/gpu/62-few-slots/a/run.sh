#!/bin/bash
# Run 62a: the reduce kernel's few-slot form (f21aca6) against e73df2a (perf_old), issue 14's
# 4 KiB `local_reduce` and two virtual CUDA devices' all_reduce, three interleaved rounds;
# anchors; the tests the form touches (`lib`: every form, op and dtype against the loop's bits;
# the native collectives on 2 and 4 virtual devices, whose star reduces take the form).
# Staged by: bash bench/gpu/stage.sh bench/gpu/62-few-slots/a e73df2a lib cuda_native
# Invoked as: timeout -k 5 170 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1
I="--sizes 4K --iters 1000 --warmup 100"
for r in 1 2 3; do
  for b in perf_old perf; do
    p lr_${b}_$r $b --op local_reduce --devices cuda:0 $I
    COLLECTIVES_CUDA_DEVICES=0,0 p v2_${b}_$r $b --op all_reduce --devices cuda:0,cuda:1 $I
  done
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
t lib lib 100
for n in 0,0 0,0,0,0; do COLLECTIVES_CUDA_DEVICES=$n t native$(( (${#n} + 1) / 2 )) cuda_native 60 --test-threads 2; done
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
