#!/bin/bash
# GPU run C: the staged ring's hops alone (probes/ring_probe.rs); the NCCL latency probe with the
# direct path; NCCL all_gather / reduce_scatter against anchors, twice, interleaved.
# Invoked as: timeout -k 5 500 bash .gpu/run_c.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
s=$(date +%s); timeout 100 $G/lib --ignored --nocapture ring_hop_probe > $L/ring_probe.log 2>&1; echo "ring probe rc=$? $(( $(date +%s)-s ))s"; grep -E "RING|panicked" $L/ring_probe.log
s=$(date +%s); timeout 60 $G/lib --ignored --nocapture nccl_latency_probe > $L/probe.log 2>&1; echo "probe rc=$? $(( $(date +%s)-s ))s"; grep PROBE $L/probe.log
for k in 1 2; do
s=$(date +%s); timeout 60 python3 $G/anchors.py --sizes 4M,16M,64M,256M --iters 20 --json $L/anchors_$k.json > $L/anchors_$k.log 2>&1; echo "anchors $k rc=$? $(( $(date +%s)-s ))s"
s=$(date +%s); timeout 100 $G/perf --op all_gather,reduce_scatter --algo nccl --devices cuda:0,cuda:1 --dtype f32,bf16 --iters 20 --warmup 5 --sizes 8M..512M:4 --json $L/perf_$k.json > $L/perf_$k.log 2>&1; echo "perf $k rc=$? $(( $(date +%s)-s ))s"
done
