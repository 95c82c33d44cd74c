#!/bin/bash
# GPU run A: NCCL latency probe; staged and Vulkan 1 GiB rows after the cache eviction + 8x16 MiB default; anchors.
# Invoked as: timeout -k 5 400 bash .gpu/run_a.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
# (lib = the crate's unit-test binary with probes/nccl_probe.rs compiled in as a child of backend/cuda/nccl.rs)
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
s=$(date +%s); timeout 90 $G/lib --ignored --nocapture nccl_latency_probe > $L/probe.log 2>&1; echo "probe rc=$? $(( $(date +%s)-s ))s"; grep PROBE $L/probe.log
s=$(date +%s); timeout 60 python3 $G/anchors.py --sizes 1M,4M,16M,64M,256M,1G --iters 10 --json $L/anchors.json > $L/anchors.log 2>&1; echo "anchors rc=$? $(( $(date +%s)-s ))s"
p() { local tag=$1 lim=$2; shift 2; local s=$(date +%s)
  timeout $lim $G/perf "$@" --json $L/perf_$tag.json > $L/perf_$tag.log 2>&1; echo "perf $tag rc=$? $(( $(date +%s)-s ))s"; grep -E '^ +[0-9]' $L/perf_$tag.log | awk '{printf "%s:%s/%s ", $1, $6, $8}'; echo; }
S="--sizes 1M..1G:4 --iters 10 --warmup 3"
p vk_up 40 --op broadcast --devices cpu:0,vulkan:0 $S
p vk_down 40 --op broadcast --devices vulkan:0,cpu:0 $S
p staged_v1 40 --op broadcast --devices cuda:0,vulkan:1 $S
p staged_back_v1 40 --op broadcast --devices vulkan:1,cuda:0 $S
p local 40 --op local_reduce --devices vulkan:0,vulkan:1 $S --dtype f32,bf16
