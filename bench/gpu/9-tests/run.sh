#!/bin/bash
# GPU run H: the test binaries not run since the staged chain's batching (vulkan_ops, cuda_ops,
# cuda_faults, comm_nccl).
# Invoked as: timeout -k 5 300 bash .gpu/run_h.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t() { local name=$1 lim=$2; shift 2; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$name.log 2>&1; local rc=$?
  printf "%-20s rc=%-3s %4ss  %s\n" $name $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$name.log | tail -1)"; }
t cuda_ops 90
t cuda_faults 90
t comm_nccl 90
t vulkan_ops 150 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
