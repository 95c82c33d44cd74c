#!/bin/bash
# GPU run 20a (one H200): main at fe60e88 — CUDA -> Vulkan ordered on the GPU (a CUDA copy into
# a Vulkan buffer signals a timeline the Vulkan device exported for it; the Vulkan submission
# reading the buffer waits for the value), the device ring's hand-overs on the GPU both ways, and
# CUDA slice views at any element (cuda_native on 8 virtual devices reads such views).
# Tests of every binary that runs CUDA beside Vulkan (also 401d2e9, 6bb8e77, 784f0dc's code, never
# run on a GPU before); perf_base (main at 784f0dc) against perf (fe60e88), two interleaved
# rounds of the CUDA <-> Vulkan rows; anchors.py in the same command.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 120 --test-threads 2 --nocapture
grep -E "imports? refused|skipped|waits for|still ran" $L/t_lib.log | head -20
t groups device_groups 150 --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 100 --test-threads 2 cuda_vulkan_and_host cuda_and_vulkan
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100
t cuda_copies cuda_copies 60
t cuda_ops cuda_ops 60
t typed typed 60
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t cuda_native8 cuda_native 120
grep -h -E "panicked|FAILED|waits for" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2; do for b in perf_base perf; do
  p ${b}_cv_$r $b --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K,64K,1M,16M,256M --iters 20 --warmup 3
  p ${b}_bc_$r $b --op broadcast --devices cuda:0,vulkan:0 --sizes 4K,64K,16M --iters 50 --warmup 5
  p ${b}_vc_$r $b --op broadcast --devices vulkan:0,cuda:0 --sizes 4K,64K,16M --iters 50 --warmup 5
  p ${b}_cvc_$r $b --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 4K,256M --iters 10 --warmup 2
done; done
date; timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; grep ceil $L/anchors.log
date
