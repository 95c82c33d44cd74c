#!/bin/bash
# GPU run D: Vulkan host<->device copy rates by host memory kind; THP; anchors per dtype.
# Invoked as: timeout -k 5 300 bash .gpu/run_d.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
# (lib with probes/bridge_probe.rs compiled in as a child of backend/vulkan/bridge.rs)
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag; grep -i huge /proc/meminfo | head -3
s=$(date +%s); timeout 100 $G/lib --ignored --nocapture vk_host_hop_probe > $L/vk_probe.log 2>&1; echo "vk probe rc=$? $(( $(date +%s)-s ))s"; grep -E "VKHOP|panicked" $L/vk_probe.log
s=$(date +%s); timeout 120 python3 $G/anchors_dtype.py --sizes 4M,16M,64M --iters 20 --json $L/anchors_dtype.json > $L/anchors_dtype.log 2>&1; echo "anchors_dtype rc=$? $(( $(date +%s)-s ))s"; cut -c1-400 $L/anchors_dtype.log
