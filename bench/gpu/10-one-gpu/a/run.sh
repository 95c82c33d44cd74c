#!/bin/bash
# GPU run 10a (one H200), at 79c86ac (main with the `correct` branch merged): release tests, n-device
# paths on virtual CUDA devices, perf, anchors.py. Its mistakes are kept as they ran: the virtual
# device variable was given a count ("2") where it takes a list ("0,0"), so the v2/v4 perf and the
# *_v8 / *_v4 tests failed at open; run 10b repeats them right.
# Invoked as: timeout -k 5 570 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 120 --test-threads 2
t cuda_ops cuda_ops 90
t cuda_copies cuda_copies 90
t cuda_faults cuda_faults 60
t cuda_native cuda_native 60
t comm_nccl comm_nccl 60
t typed typed 60
t device_groups device_groups 90 --test-threads 2
t vulkan_collectives vulkan_collectives 90
t vulkan_division vulkan_ops 90 division
COLLECTIVES_CUDA_DEVICES=8 t cuda_native_v8 cuda_native 90
COLLECTIVES_CUDA_DEVICES=4 t device_groups_v4 device_groups 90 --test-threads 2
grep -h -E "panicked|FAILED|wrong" $L/t_*.log | head -30
s=$(date +%s); timeout 60 python3 $G/anchors.py --sizes 4K,1M,16M,64M,256M --iters 20 --json $L/anchors.json > $L/anchors.log 2>&1; echo "anchors rc=$? $(( $(date +%s)-s ))s"
p() { local tag=$1 lim=$2; shift 2; local s=$(date +%s)
  timeout $lim $G/perf "$@" --json $L/perf_$tag.json > $L/perf_$tag.log 2>&1; echo "perf $tag rc=$? $(( $(date +%s)-s ))s"; }
N="--dtype f32 --iters 20 --warmup 5"
for k in 1 2; do
  COLLECTIVES_CUDA_DEVICES=2 p v2_small_$k 60 --op all_reduce --algo oneshot,star,ring --devices cuda:0,cuda:1 $N --sizes 4K..1M:4
  COLLECTIVES_CUDA_DEVICES=2 p v2_big_$k 60 --op all_reduce --algo oneshot,star,ring --devices cuda:0,cuda:1 $N --sizes 4M..256M:4
  COLLECTIVES_CUDA_DEVICES=4 p v4_$k 60 --op all_reduce --algo oneshot,star,ring,auto --devices cuda:0,cuda:1,cuda:2,cuda:3 $N --sizes 4K..256M:8
done
p xv 90 --op all_reduce,broadcast --algo star,ring --devices cuda:0,vulkan:0 $N --sizes 4K..256M:8
p nccl1 30 --op all_reduce --algo nccl,auto --devices cuda:0 $N --sizes 4K..64M:8
