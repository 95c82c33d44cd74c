#!/bin/bash
# GPU run 21c (one H200): main at ccb47a9 — a small slice or concat of Vulkan tensors in host
# memory is done by the host (no submission). Its tests (lib, device_groups with both bridges,
# typed, vulkan_collectives, vulkan_ops copy); perf_base (9907844, before) against perf (ccb47a9),
# two interleaved rounds of the 4 KiB and 64 KiB all_to_all, all_gather and reduce_scatter of
# cuda:0,vulkan:0,cpu:0 and vulkan:0,cpu:0 (the all_to_all of the three kinds: 450-550 us in run
# b); the step timeline (COLLECTIVES_LOG=debug) of that all_to_all before and after; host profiles
# (perf_prof: e74fc87 built with --features profile) of issue 14's 4 KiB rows; then the one
# vulkan_ops test run b's 150 s cut off (reduce_every_kind_with_and_without_scale), given 100 s.
# Invoked as: timeout -k 5 420 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 120 --test-threads 2
t groups device_groups 150 --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 100 --test-threads 2 cuda_vulkan_and_host cuda_and_vulkan
t typed typed 60
t vulkan_collectives vulkan_collectives 60
t vulkan_ops_copy vulkan_ops 100 --test-threads 2 copy::
grep -h -E "panicked|FAILED|waits for" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2; do
  for b in perf_base perf; do
    p ${b}_cvc_$r $b --op all_to_all,all_gather,reduce_scatter --devices cuda:0,vulkan:0,cpu:0 --sizes 4K,64K --iters 50 --warmup 5
    p ${b}_vc_$r $b --op all_to_all,all_gather,reduce_scatter --devices vulkan:0,cpu:0 --sizes 4K,64K --iters 50 --warmup 5
  done
done
for b in perf_base perf; do
  COLLECTIVES_LOG=debug timeout 60 $G/$b --op all_to_all --devices cuda:0,vulkan:0,cpu:0 --sizes 4K --iters 3 --warmup 3 > $L/dbg_$b.log 2>&1
  echo "== timeline $b"; grep -A16 "realize steps" $L/dbg_$b.log | tail -17
done
P=$L/prof
q() { local tag=$1; shift; timeout 60 $G/perf_prof "$@" > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; }
q prof_local --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 20000 --warmup 100 --profile $P/local
q prof_cc --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 20000 --warmup 100 --profile $P/cuda_cpu
COLLECTIVES_CUDA_DEVICES=0,0 q prof_v2 --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 20000 --warmup 100 --profile $P/v2
for f in $P/*/*.txt; do echo "== $f"; sed -n 3,12p $f; done
s=$(date +%s); timeout 100 $G/vulkan_ops reduce_every_kind_with_and_without_scale > $L/t_vulkan_ops_reduce.log 2>&1
echo "vulkan_ops reduce rc=$? $(( $(date +%s) - s ))s $(grep -E '^test result' $L/t_vulkan_ops_reduce.log)"
date
