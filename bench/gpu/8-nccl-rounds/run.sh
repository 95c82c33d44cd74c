#!/bin/bash
# GPU run G (final): quick GPU tests after the batched staged chain; anchors.py; three interleaved
# rounds of anchors_dtype.py (f32 and bf16 NCCL from CuPy) and the perf tool's NCCL collectives
# (broadcast also as the default peer copy).
# Invoked as: timeout -k 5 450 bash .gpu/run_g.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t() { local name=$1 lim=$2; shift 2; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$name.log 2>&1; local rc=$?
  printf "%-20s rc=%-3s %4ss  %s\n" $name $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$name.log | tail -1)"; }
t device_groups 90 --test-threads 2
t typed 60
t vulkan_collectives 60
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
s=$(date +%s); timeout 60 python3 $G/anchors.py --sizes 1M,4M,16M,64M,256M,1G --iters 20 --json $L/anchors.json > $L/anchors.log 2>&1; echo "anchors rc=$? $(( $(date +%s)-s ))s"
p() { local tag=$1 lim=$2; shift 2; local s=$(date +%s)
  timeout $lim $G/perf "$@" --json $L/perf_$tag.json > $L/perf_$tag.log 2>&1; echo "perf $tag rc=$? $(( $(date +%s)-s ))s"; }
N="--devices cuda:0,cuda:1 --dtype f32,bf16 --iters 20 --warmup 5"
for k in 1 2 3; do
  s=$(date +%s); timeout 90 python3 $G/anchors_dtype.py --sizes 4M,16M,64M,256M --iters 20 --json $L/anchors_dtype_$k.json > $L/anchors_dtype_$k.log 2>&1; echo "anchors_dtype $k rc=$? $(( $(date +%s)-s ))s"
  p ag_rs_$k 90 --op all_gather,reduce_scatter --algo nccl $N --sizes 8M..512M:4
  p ar_$k 60 --op all_reduce --algo nccl $N --sizes 4M..256M:4
  p bc_$k 60 --op broadcast --algo nccl,auto $N --sizes 4M..256M:4
done
python3 $G/compare_rounds.py "$L/anchors_dtype_[123].json" "$L/perf_ag_rs_[123].json" "$L/perf_ar_[123].json" "$L/perf_bc_[123].json" | tee $L/rounds.md
