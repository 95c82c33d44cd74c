#!/bin/bash
# GPU run A: every GPU-facing test binary on 2 x H200 (CUDA + NVIDIA Vulkan). Env set by the caller.
G=.gpu
source $G/env.sh
nvidia-smi topo -m > $L/topo.txt 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> $L/topo.txt
vulkaninfo --summary > $L/vulkaninfo.txt 2>&1 || true
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t() { local name=$1 lim=$2; shift 2; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$name.log 2>&1; local rc=$?
  printf "%-20s rc=%-3s %4ss  %s\n" $name $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$name.log | tail -1)"; }
t lib 150 --test-threads 2
t cuda_ops 120
t cuda_copies 120
t cuda_faults 120
t device_groups 200 --test-threads 2
t typed 60
t vulkan_ops 150 --test-threads 2
t vulkan_collectives 120
t comm_local 60
for ex in quickstart data_parallel tensor_parallel spmd_train; do s=$(date +%s); timeout 60 $G/$ex > $L/ex_$ex.log 2>&1; echo "$ex rc=$? $(( $(date +%s)-s ))s"; done
grep -h -E "panicked|FAILED|failed" $L/t_*.log | head -30
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
