#!/bin/bash
# Run 66c: run b found the two levels of a CUDA row are not where the process runs (one NUMA node;
# bound to one CPU, the same row read 7.3-7.5 in one process and 8.5-8.7 in another), and that a
# process keeps its level (p10-p90 within 0.5 us). Is the level the driver's, below the library?
# The layers probe, its rows in turn, in sixteen processes one after another: each process's
# driver floor (memset + synchronize, the smallest kernel + synchronize), the raw reduce launch,
# the backend's compute and the library's local_reduce of two, side by side. If the floor rows
# move with the library's row from process to process, the level is below the library.
# Staged by: the .gpu of run b (bash bench/gpu/stage.sh bench/gpu/66-pair-and-trims/b - lib, the
# same tree), its run.sh replaced by this one (cp bench/gpu/66-pair-and-trims/c/run.sh .gpu/).
# Invoked as: timeout -k 5 300 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1
echo "process: memset+sync, smallest kernel+sync, reduce launch+sync, backend compute+wait, library local_reduce (medians, us)"
for i in $(seq 1 16); do
  timeout 60 $G/lib --ignored --nocapture --exact backend::cuda::probe::local_reduce_layers_probe \
    > $L/layers_$i.log 2>&1
  echo "$i: $(grep -E '^probe' $L/layers_$i.log | grep -E 'memset|smallest|reduce launch \+ stream|backend compute|library' | awk '{printf "%s ", $2}')$(grep -c panicked $L/layers_$i.log) panics"
done
I="--sizes 4K --iters 1000 --warmup 100"
for i in 1 2 3 4; do p lr_$i perf --op local_reduce --devices cuda:0 $I; done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
