#!/bin/bash
# Run 48c: the rule run b's trial gave, built (a fold for a Vulkan device alone of inputs under
# DEVICE_MIN_BYTES stays on the Vulkan device, where the host computes it; the one-shot
# all_reduce's fold still CUDA's): this build (`perf`) against d2be6d3 (`perf_old`), three
# rounds, the order alternating — a Vulkan leader's reduce (and gather, unchanged), the one-shot
# all_reduce and reduce_scatter of both orders, the star all_reduce and reduce_scatter above the
# staged bound, the reduce and all_reduce of vulkan:0,cpu:0,cuda:0; anchors. Then the tests.
# Staged by: bash bench/gpu/stage.sh bench/gpu/48-host-time/c d2be6d3 lib plans typed device_groups vulkan_collectives collective_props faults (at the change, uncommitted: c/change.diff)
# Invoked as: timeout -k 5 500 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nproc
A="--iters 100 --warmup 10"
rows() { local b=$1 r=$2
  p g_vcR_${b}_$r $b --op reduce,gather --devices vulkan:0,cuda:0 --sizes 4K,16K,64K,128K,240K,256K $A
  p g_vcO_${b}_$r $b --op all_reduce,reduce_scatter --algo oneshot --devices vulkan:0,cuda:0 --sizes 4K,64K,192K $A
  p g_cvO_${b}_$r $b --op all_reduce,reduce_scatter --algo oneshot --devices cuda:0,vulkan:0 --sizes 4K,64K,192K $A
  p g_vcS_${b}_$r $b --op all_reduce,reduce_scatter --devices vulkan:0,cuda:0 --sizes 32K,64K,128K,192K $A
  p g_vxc_${b}_$r $b --op reduce,all_reduce --devices vulkan:0,cpu:0,cuda:0 --sizes 4K,64K,192K $A
}
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then rows perf_old $r; rows perf $r; else rows perf $r; rows perf_old $r; fi
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t plans plans 40
t vcoll vulkan_collectives 60
t typed typed 40
t props collective_props 60
t lib lib 100 --test-threads 4
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 70 --show-output
grep -h "^total:" $L/t_faults2.log
t groups device_groups 150 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
