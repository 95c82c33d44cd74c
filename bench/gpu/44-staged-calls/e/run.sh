#!/bin/bash
# Run 44e (one H100, 2026-12-06, the machine of run a still held): as d with sixteen shards (up to 4.0 MiB moved).
# Staged by: run a's staging (.gpu as run a carried it)
# Invoked as: the command below, as given to `run` with carry [".gpu", ".gl"]
G=.gpu; tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh; D16=vulkan:0$(for i in $(seq 1 15); do printf ",cpu:%d" $i; done); for r in 1 2; do order="dev host"; [ $r = 2 ] && order="host dev"; for m in $order; do export COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=$([ $m = dev ] && echo 0 || echo 8388608); p k_${m}_${r}_16 perf --op local_reduce --devices $D16 --sizes 128K,192K,240K --iters 200 --warmup 20; done; done 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
