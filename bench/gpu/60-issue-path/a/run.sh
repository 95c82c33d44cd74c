#!/bin/bash
# Run 60a: f480f91 (a launch's inputs and outputs inline on the CUDA issue path, over 675a193's
# stack-free reduce kernel) against 675a193 (perf_old), issue 14's 4 KiB CUDA rows, realized and
# with 8 in flight, four interleaved rounds; the layers probe; anchors; then every GPU-facing test
# binary on f480f91 (graph launches on, the default), the native collectives on 2, 3, 4 and 8
# virtual devices.
# Staged by: bash bench/gpu/stage.sh bench/gpu/60-issue-path/a 675a193 lib cuda_native cuda_ops cuda_copies cuda_faults device_groups issued joins plans typed collective_moves collective_props
# Invoked as: timeout -k 5 540 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1
I="--sizes 4K --iters 1000 --warmup 100"
for r in 1 2 3 4; do
  for b in perf_old perf; do
    p lr_${b}_$r $b --op local_reduce --devices cuda:0 $I
    p lri_${b}_$r $b --op local_reduce --devices cuda:0 $I --in-flight 8
    p ch_${b}_$r $b --op all_reduce --devices cuda:0,cpu:0 $I
    COLLECTIVES_CUDA_DEVICES=0,0 p v2_${b}_$r $b --op all_reduce --devices cuda:0,cuda:1 $I
  done
done
timeout 60 $G/lib --ignored --nocapture --exact backend::cuda::probe::local_reduce_layers_probe \
  > $L/layers.log 2>&1; grep -E "^probe|panicked" $L/layers.log
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
t lib lib 150
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native8 cuda_native 90 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0 t native3 cuda_native 90 --test-threads 2
t copies cuda_copies 60
t ops cuda_ops 60
t faults cuda_faults 60
COLLECTIVES_CUDA_DEVICES=0,0,0,0 t issued4 issued 90
t plans plans 60
t joins joins 60
t typed typed 60
t moves collective_moves 30
t props collective_props 120
t groups device_groups 130 --test-threads 2
for n in 0,0 0,0,0,0; do COLLECTIVES_CUDA_DEVICES=$n t native$(( (${#n} + 1) / 2 )) cuda_native 90 --test-threads 2; done
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
