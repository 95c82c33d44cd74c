#!/bin/bash
# GPU run 11f (one H200): the final main of this stop (shared Vulkan buffers gated on NVIDIA,
# hardware Vulkan devices listed first): lib tests and the bridge's groups, both bridges.
# Invoked as: timeout -k 5 300 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t staged lib 60 staged --nocapture
grep -h -E "<->" $L/t_staged.log
t lib lib 150 --test-threads 2
t groups device_groups 150 cuda_and_vulkan cuda_vulkan_and_host --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 150 cuda_and_vulkan cuda_vulkan_and_host --test-threads 2
timeout 60 $G/lib device_ring_timing --ignored --nocapture 2>&1 | grep -E "transfer round 2"
grep -h -E "panicked|FAILED|wrong" $L/t_*.log | head -20
