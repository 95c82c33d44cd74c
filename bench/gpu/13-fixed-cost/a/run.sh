#!/bin/bash
# GPU run 13a (one H200): CUDA tests on this change (pooled CUDA events), then the fixed cost of
# a call at 4 KiB before (perf_base: main 02664b0) and after (perf: this change), interleaved.
# Invoked as: timeout -k 5 570 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 120 --test-threads 2
t cuda_ops cuda_ops 90
t cuda_copies cuda_copies 90
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t cuda_native8 cuda_native 120
t comm_nccl comm_nccl 60
COLLECTIVES_CUDA_DEVICES=0,0 t groups device_groups 150 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
C8=cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7
p() { # tag binary args...: one perf invocation, its rows in the summary
  local tag=$1 bin=$2; shift 2
  timeout 120 $G/$bin "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log
}
for r in 1 2 3; do
  for b in perf_base perf; do
    p ${b}_c8_$r $b --op all_reduce --devices $C8 --sizes 4K,64K,1M --iters 200 --warmup 20
    p ${b}_cc_$r $b --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 200 --warmup 20
    COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_lr_$r $b --op local_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 200 --warmup 20
    COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_v2_$r $b --op all_reduce --devices cuda:0,cuda:1 --algo star --sizes 4K --iters 200 --warmup 20
  done
done
COLLECTIVES_CUDA_DEVICES=0,0 COLLECTIVES_LOG=debug p dbg_lr perf --op local_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 20 --warmup 5
COLLECTIVES_LOG=debug p dbg_cc perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 20 --warmup 5
grep -h "realize:" $L/dbg_lr.log | tail -3; grep -h "realize:" $L/dbg_cc.log | tail -3
p c8_floor perf --op all_reduce --devices $C8 --sizes 16M,64M,256M --iters 20 --warmup 3 --floor
python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; tail -25 $L/anchors.log
