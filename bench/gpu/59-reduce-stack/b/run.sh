#!/bin/bash
# Run 59b: whether the reduce kernel's latency at 4 KiB depends on its loads being issued one after
# another (the loop, batches of one) or together (batches of 2 and 4): issue 14's 4 KiB rows and the
# 4 KiB all_reduce of eight virtual CUDA devices with COLLECTIVES_REDUCE_BATCH unset, 2 and 4 in
# turn, three rounds; the layers probe (whose reduce folds two inputs) likewise, once; anchors.
# Staged by: run a's .gpu (675a193), with this file as .gpu/run_b.sh
# Invoked as: timeout -k 5 200 bash .gpu/run_b.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1
I="--sizes 4K --iters 1000 --warmup 100"
V8=0,0,0,0,0,0,0,0
D8=cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7
for r in 1 2 3; do
  for b in "" 2 4; do
    export COLLECTIVES_REDUCE_BATCH=$b
    [ -z "$b" ] && unset COLLECTIVES_REDUCE_BATCH
    p lr_b${b}_$r perf --op local_reduce --devices cuda:0 $I
    COLLECTIVES_CUDA_DEVICES=0,0 p v2_b${b}_$r perf --op all_reduce --devices cuda:0,cuda:1 $I
    COLLECTIVES_CUDA_DEVICES=$V8 p v8_b${b}_$r perf --op all_reduce --devices $D8 --sizes 4K --iters 300 --warmup 30
  done
done
for b in "" 2 4; do
  export COLLECTIVES_REDUCE_BATCH=$b
  [ -z "$b" ] && unset COLLECTIVES_REDUCE_BATCH
  echo "layers, batch ${b:-unset}"
  timeout 60 $G/lib --ignored --nocapture --exact backend::cuda::probe::local_reduce_layers_probe \
    > $L/layers_b$b.log 2>&1
  grep -E "^probe.*(binary|reduce launch \+ stream|realize)|panicked" $L/layers_b$b.log
done
unset COLLECTIVES_REDUCE_BATCH
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
