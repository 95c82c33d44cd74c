#!/bin/bash
# Run 59a: the reduce kernel without local memory (each input's pointer read at a fixed offset of
# the parameters, where the loop over inputs copied all sixteen into a 128-byte stack per thread)
# against 27dee07's (perf_old), four interleaved rounds of issue 14's 4 KiB CUDA rows; where a
# 4 KiB local_reduce's time goes (the layers probe, graph launches off and on); `cpu:0..7`; host
# profiles (`perf --profile`, pprof) of the realized 4 KiB local_reduce and `cuda:0,cpu:0`
# all_reduce and of the local_reduce issued with 8 in flight; anchors; then the tests the change
# touches (every reduce form, op and dtype in `lib`; carried host inputs in `lib` and
# `device_groups`; the native collectives on 3 and 8 virtual devices).
# Staged by: bash bench/gpu/stage.sh bench/gpu/59-reduce-stack/a 27dee07 lib cuda_native cuda_ops cuda_copies device_groups,
#   then perf built with `--features profile` (not stripped) added to .gpu/bins.tar.xz as perf_prof
# Invoked as: timeout -k 5 470 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1
I="--sizes 4K --iters 1000 --warmup 100"
for r in 1 2 3 4; do
  for b in perf_old perf; do
    p lr_${b}_$r $b --op local_reduce --devices cuda:0 $I
    p ch_${b}_$r $b --op all_reduce --devices cuda:0,cpu:0 $I
    COLLECTIVES_CUDA_DEVICES=0,0 p v2_${b}_$r $b --op all_reduce --devices cuda:0,cuda:1 $I
  done
done
for g in 0 1; do
  echo "layers, graphs $g"
  COLLECTIVES_CUDA_GRAPH_LAUNCH=$g timeout 60 $G/lib --ignored --nocapture --exact \
    backend::cuda::probe::local_reduce_layers_probe > $L/layers_g$g.log 2>&1
  grep -E "^probe|panicked" $L/layers_g$g.log
done
for r in 1 2 3; do
  p c8_$r perf --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 $I
done
p prof_lr perf_prof --op local_reduce --devices cuda:0 --sizes 4K --iters 300000 --warmup 1000 --no-check --profile $L/prof_lr
p prof_ch perf_prof --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 200000 --warmup 1000 --no-check --profile $L/prof_ch
p prof_lri perf_prof --op local_reduce --devices cuda:0 --sizes 4K --iters 400000 --warmup 1000 --in-flight 8 --no-check --profile $L/prof_lri
head -30 $L/prof_lr/*.txt 2>/dev/null | cut -c1-150
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
t lib lib 150
COLLECTIVES_CUDA_DEVICES=0,0,0 t native3 cuda_native 90 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native8 cuda_native 90 --test-threads 2
t ops cuda_ops 60
t copies cuda_copies 60
t groups device_groups 130 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
