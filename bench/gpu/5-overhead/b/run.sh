#!/bin/bash
# GPU run B: every GPU-facing test after the CUDA allocation shelf and foldhash (before the
# direct path); the NCCL latency probe; NCCL all_gather / reduce_scatter / all_reduce; anchors.
# Invoked as: timeout -k 5 580 bash .gpu/run_b.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t() { local name=$1 lim=$2; shift 2; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$name.log 2>&1; local rc=$?
  printf "%-20s rc=%-3s %4ss  %s\n" $name $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$name.log | tail -1)"; }
t lib 90 --test-threads 4
t cuda_ops 90
t cuda_copies 90
t cuda_faults 90
t device_groups 90 --test-threads 2
t typed 60
t vulkan_collectives 60
t comm_local 60
t comm_nccl 120
t vulkan_ops 150 --test-threads 2
s=$(date +%s); timeout 30 $G/quickstart > $L/ex_quickstart.log 2>&1; echo "quickstart rc=$? $(( $(date +%s)-s ))s"
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
s=$(date +%s); timeout 60 $G/lib --ignored --nocapture nccl_latency_probe > $L/probe.log 2>&1; echo "probe rc=$? $(( $(date +%s)-s ))s"; grep PROBE $L/probe.log
s=$(date +%s); timeout 60 python3 $G/anchors.py --sizes 1M,4M,16M,64M,256M,1G --iters 20 --json $L/anchors.json > $L/anchors.log 2>&1; echo "anchors rc=$? $(( $(date +%s)-s ))s"
p() { local tag=$1 lim=$2; shift 2; local s=$(date +%s)
  timeout $lim $G/perf "$@" --json $L/perf_$tag.json > $L/perf_$tag.log 2>&1; echo "perf $tag rc=$? $(( $(date +%s)-s ))s"; grep -E '^ +[0-9]' $L/perf_$tag.log | awk '{printf "%s:%s:%s ", $1, $3, $6}'; echo; }
p nccl_ag_rs 120 --op all_gather,reduce_scatter --algo nccl --devices cuda:0,cuda:1 --dtype f32,bf16 --iters 20 --warmup 5 --sizes 2M..2G:4
p nccl_ar 60 --op all_reduce --algo nccl --devices cuda:0,cuda:1 --dtype f32,bf16 --iters 20 --warmup 5 --sizes 1M..1G:4
