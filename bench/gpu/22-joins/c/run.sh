#!/bin/bash
# GPU run 22c (one H200): the one-shot all_gather on groups that are not one multi-device call:
# every member joins every shard itself (each copied straight into its range where the pair
# allows), instead of the star's gather on the leader and broadcast of the joined result. Its
# tests (device_groups with both bridges, collective_props with lavapipe's place taken by the
# H200's Vulkan device, joins, the fault sweep on two virtual CUDA devices); then the same perf
# binary with --algo star and --algo oneshot, two interleaved rounds, for the all_gather of
# cuda:0,cpu:0, vulkan:0,cpu:0, cuda:0,vulkan:0,cpu:0, two virtual CUDA devices and cpu:0, and
# cuda:0 with three host devices, from 4 KiB to 256 MiB; anchors.py in the same command.
# Invoked as: timeout -k 5 500 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t groups device_groups 150 --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 100 --test-threads 2 cuda_vulkan_and_host cuda_and_vulkan
t props collective_props 100
t joins joins 60
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100 --nocapture
grep -h -E "panicked|FAILED|total:" $L/t_*.log | head -20
p() { local tag=$1; shift; timeout 100 $G/perf "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
S=4K,64K,1M,16M,256M
for r in 1 2; do
  for a in star oneshot; do
    p ${a}_ch_$r --algo $a --op all_gather --devices cuda:0,cpu:0 --sizes $S --iters 20 --warmup 3
    p ${a}_vh_$r --algo $a --op all_gather --devices vulkan:0,cpu:0 --sizes $S --iters 20 --warmup 3
    p ${a}_cvh_$r --algo $a --op all_gather --devices cuda:0,vulkan:0,cpu:0 --sizes $S --iters 20 --warmup 3
    COLLECTIVES_CUDA_DEVICES=0,0 p ${a}_cch_$r --algo $a --op all_gather --devices cuda:0,cuda:1,cpu:0 --sizes $S --iters 20 --warmup 3
    p ${a}_chhh_$r --algo $a --op all_gather --devices cuda:0,cpu:0,cpu:1,cpu:2 --sizes $S --iters 20 --warmup 3
  done
done
timeout 120 python3 $G/anchors.py --sizes 4K,1M,16M,256M,1G --iters 20 > $L/anchors.log 2>&1; tail -8 $L/anchors.log
date
