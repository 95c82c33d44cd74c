#!/bin/bash
# Run 61b: run a again with two more forms in the kernel-size probe: the reduce in batches of
# two (both loads issued together), with 16 and with 4 slots; the layers probe; anchors.
# Staged by: bash bench/gpu/stage.sh bench/gpu/61-kernel-size/b - lib
# Invoked as: timeout -k 5 120 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1
for r in 1 2; do
  timeout 60 $G/lib --ignored --nocapture --exact backend::cuda::probe::size::kernel_size_probe \
    > $L/size_$r.log 2>&1; grep -E "^probe|panicked|test result" $L/size_$r.log
done
timeout 60 $G/lib --ignored --nocapture --exact backend::cuda::probe::local_reduce_layers_probe \
  > $L/layers.log 2>&1; grep -E "^probe|panicked" $L/layers.log
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
