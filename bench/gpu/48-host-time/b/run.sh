#!/bin/bash
# Run 48b (trial): a small fold bound for a Vulkan device that shares its GPU with a CUDA input's
# device, kept on the Vulkan device (its inputs and result in host memory: the host computes it,
# once the CUDA input is downloaded) instead of computed by CUDA and copied over —
# COLLECTIVES_TRIAL_HOST_FOLD=1 (`perf_x`) against the same binary without it (`perf`), three
# rounds, the order alternating: a Vulkan leader's reduce, the one-shot all_reduce and
# reduce_scatter (every member folds for itself), the star all_reduce and reduce_scatter above the
# staged bound; anchors. Then, with the trial on, `device_groups`, `vulkan_collectives`, `plans`.
# Staged by: bash bench/gpu/stage.sh bench/gpu/48-host-time/b - device_groups vulkan_collectives plans (at d2be6d3 + the trial in collective/star.rs, b/trial.diff)
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nproc
A="--iters 100 --warmup 10"
rows() { local b=$1 r=$2
  p g_vcR_${b}_$r perf --op reduce,gather --devices vulkan:0,cuda:0 --sizes 4K,16K,64K,128K,192K $A
  p g_vcO_${b}_$r perf --op all_reduce,reduce_scatter --algo oneshot --devices vulkan:0,cuda:0 --sizes 4K,16K,64K,192K $A
  p g_cvO_${b}_$r perf --op all_reduce,reduce_scatter --algo oneshot --devices cuda:0,vulkan:0 --sizes 4K,16K,64K,192K $A
  p g_vcS_${b}_$r perf --op all_reduce,reduce_scatter --devices vulkan:0,cuda:0 --sizes 32K,64K,128K,192K $A
  p g_vxc_${b}_$r perf --op reduce,all_reduce --devices vulkan:0,cpu:0,cuda:0 --sizes 4K,64K,192K $A
}
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then COLLECTIVES_TRIAL_HOST_FOLD=1 rows perf_x $r; rows perf $r
  else rows perf $r; COLLECTIVES_TRIAL_HOST_FOLD=1 rows perf_x $r; fi
done
timeout 40 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1 COLLECTIVES_TRIAL_HOST_FOLD=1
t vcoll vulkan_collectives 60
t plans plans 40
t groups device_groups 150 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
