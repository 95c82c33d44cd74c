#!/bin/bash
# GPU run E (final of the session): GPU tests after the CUDA allocation shelf and the direct
# path; the NCCL latency probe; anchors.py; three interleaved rounds of anchors_dtype.py and the
# perf tool's NCCL all_gather / reduce_scatter / all_reduce; the staged chain both ways; 1 GiB rows.
# Invoked as: timeout -k 5 560 bash .gpu/run_e.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
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
for ex in quickstart data_parallel tensor_parallel spmd_train; do s=$(date +%s); timeout 60 $G/$ex > $L/ex_$ex.log 2>&1; echo "$ex rc=$? $(( $(date +%s)-s ))s"; done
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
s=$(date +%s); timeout 60 $G/lib --ignored --nocapture nccl_latency_probe > $L/probe.log 2>&1; echo "probe rc=$? $(( $(date +%s)-s ))s"; grep PROBE $L/probe.log
s=$(date +%s); timeout 60 python3 $G/anchors.py --sizes 1M,4M,16M,64M,256M,1G --iters 20 --json $L/anchors.json > $L/anchors.log 2>&1; echo "anchors rc=$? $(( $(date +%s)-s ))s"
p() { local tag=$1 lim=$2; shift 2; local s=$(date +%s)
  timeout $lim $G/perf "$@" --json $L/perf_$tag.json > $L/perf_$tag.log 2>&1; echo "perf $tag rc=$? $(( $(date +%s)-s ))s $(grep -E '^ +[0-9]' $L/perf_$tag.log | awk '{printf "%s:%s:%s ", $1, $3, $6}')"; }
N="--algo nccl --devices cuda:0,cuda:1 --dtype f32,bf16 --iters 20 --warmup 5"
for k in 1 2 3; do
  s=$(date +%s); timeout 60 python3 $G/anchors_dtype.py --sizes 4M,16M,64M,256M --iters 20 --json $L/anchors_dtype_$k.json > $L/anchors_dtype_$k.log 2>&1; echo "anchors_dtype $k rc=$? $(( $(date +%s)-s ))s"
  p ag_rs_$k 90 --op all_gather,reduce_scatter $N --sizes 8M..512M:4
  p ar_$k 60 --op all_reduce $N --sizes 4M..256M:4
done
p big 90 --op all_reduce,broadcast $N --sizes 1G --iters 10 --warmup 3   # rc=2: --iters given twice, see the end
p big_ag_rs 90 --op all_gather,reduce_scatter $N --sizes 2G --iters 10 --warmup 3   # rc=2: as above
S="--sizes 1M..1G:4 --iters 10 --warmup 3"
p staged_v1 40 --op broadcast --devices cuda:0,vulkan:1 $S
p staged_back_v1 40 --op broadcast --devices vulkan:1,cuda:0 $S
# The two 1 GiB rows above failed on a repeated --iters flag (rc=2); run again on the still-warm
# machine with:
#   source .gpu/env.sh; N="--algo nccl --devices cuda:0,cuda:1 --dtype f32,bf16 --iters 10 --warmup 3"
#   .gpu/perf --op all_reduce,broadcast $N --sizes 1G --json $L/perf_big.json
#   .gpu/perf --op all_gather,reduce_scatter $N --sizes 2G --json $L/perf_big_ag_rs.json
#   python3 .gpu/anchors_dtype.py --sizes 1G --iters 10 --json $L/anchors_dtype_1g.json
