#!/bin/bash
# GPU run: the Vulkan buffer cache; Vulkan and staged perf (geometries, both Vulkan devices);
# NCCL all_gather / reduce_scatter; anchors.py in the same command.
# Invoked as: timeout -k 5 540 bash .gpu/run_r2.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t() { local name=$1 lim=$2; shift 2; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$name.log 2>&1; local rc=$?
  printf "%-20s rc=%-3s %4ss  %s\n" $name $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$name.log | tail -1)"; }
t lib 60 --test-threads 4
t cuda_copies 60 --nocapture
t device_groups 60 --test-threads 2
t vulkan_collectives 60
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
s=$(date +%s); timeout 60 python3 $G/anchors.py --sizes 1M,4M,16M,64M,256M,1G --iters 10 --json $L/anchors.json > $L/anchors.log 2>&1; echo "anchors rc=$? $(( $(date +%s)-s ))s"
p() { local tag=$1 lim=$2; shift 2; local s=$(date +%s)
  timeout $lim $G/perf "$@" --json $L/perf_$tag.json > $L/perf_$tag.log 2>&1; echo "perf $tag rc=$? $(( $(date +%s)-s ))s $(grep -E '^ +1073741824' $L/perf_$tag.log | awk '{print $6, $9}' | tr '\n' ' ')"; }
S="--sizes 1M..1G:4 --iters 10 --warmup 3"
p vk_up 30 --op broadcast --devices cpu:0,vulkan:0 $S
p vk_down 30 --op broadcast --devices vulkan:0,cpu:0 $S
p staged_v0 30 --op broadcast --devices cuda:0,vulkan:0 $S
p staged_v1 30 --op broadcast --devices cuda:0,vulkan:1 $S
p staged_back_v0 30 --op broadcast --devices vulkan:0,cuda:0 $S
p staged_back_v1 30 --op broadcast --devices vulkan:1,cuda:0 $S
for g in 4194304:4 67108864:4 16777216:8; do c=${g%:*}; n=${g#*:}
  COLLECTIVES_STAGED_CHUNK_BYTES=$c COLLECTIVES_STAGED_SLOTS=$n p staged_c${c}_s$n 25 --op broadcast --devices cuda:0,vulkan:1 --sizes 1G --iters 10 --warmup 3; done
p local 30 --op local_reduce --devices vulkan:0,vulkan:1 $S --dtype f32,bf16
p mixed 30 --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 1M..1G:4 --iters 5 --warmup 2
p nccl_ag_rs 120 --op all_gather,reduce_scatter --algo nccl --devices cuda:0,cuda:1 --dtype f32,bf16 --iters 10 --warmup 3 --sizes 2M..2G:4
