#!/bin/bash
# GPU run: tests of the staged chain and Vulkan division fix, then Vulkan, staged and CUDA perf
# next to anchors.py, all in one command.
# Invoked as: timeout -k 5 560 bash .gpu/run_r1.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nvidia-smi topo -m > $L/topo.txt 2>&1
t() { local name=$1 lim=$2; shift 2; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$name.log 2>&1; local rc=$?
  printf "%-20s rc=%-3s %4ss  %s\n" $name $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$name.log | tail -1)"; }
t lib 100 --test-threads 4
t cuda_copies 100 --nocapture
t device_groups 100 --test-threads 2
t vulkan_collectives 60
t typed 60
t vulkan_ops 150 --test-threads 8
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
grep -h -E "Pipelined|TwoHops|GB/s" $L/t_cuda_copies.log | head -20
s=$(date +%s); timeout 100 python3 $G/anchors.py --sizes 1M,4M,16M,64M,256M,1G --iters 10 --json $L/anchors.json > $L/anchors.log 2>&1; echo "anchors rc=$? $(( $(date +%s)-s ))s"
grep -h -E "ceil" $L/anchors.log | tail -2 | cut -c1-120
p() { local tag=$1 lim=$2; shift 2; local s=$(date +%s)
  timeout $lim $G/perf "$@" --json $L/perf_$tag.json > $L/perf_$tag.log 2>&1; echo "perf $tag rc=$? $(( $(date +%s)-s ))s"; }
S="--sizes 1M..1G:4 --iters 10 --warmup 3"
p vk_up 40 --op broadcast --devices cpu:0,vulkan:0 $S
p vk_down 40 --op broadcast --devices vulkan:0,cpu:0 $S
p staged 60 --op broadcast --devices cuda:0,vulkan:0 $S
p staged_back 60 --op broadcast --devices vulkan:0,cuda:0 $S
COLLECTIVES_STAGED_CHAIN=0 p staged_off 40 --op broadcast --devices cuda:0,vulkan:0 --sizes 64M,1G --iters 10 --warmup 3
p local 60 --op local_reduce --devices vulkan:0,vulkan:1 $S --dtype f32,bf16
p local_cuda 60 --op local_reduce --devices cuda:0,cuda:1 $S --dtype f32,bf16
p mixed 60 --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 1M..256M:4 --iters 5 --warmup 2
P="--devices cuda:0,cuda:1 --dtype f32,bf16 --iters 10 --warmup 3"
p nccl_ar_bc 60 --op all_reduce,broadcast --algo nccl $P --sizes 1M..1G:4
p nccl_ag_rs 60 --op all_gather,reduce_scatter --algo nccl $P --sizes 2M..2G:4
p native_rs 100 --op reduce_scatter --algo star,ring $P --sizes 2M..2G:4
p native_rest 80 --op broadcast,all_gather --algo ring --dtype bf16 --devices cuda:0,cuda:1 --sizes 2M..2G:4 --iters 10 --warmup 3
