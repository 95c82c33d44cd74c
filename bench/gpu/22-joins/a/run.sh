#!/bin/bash
# GPU run 22a (one H200): concat as placement. A concat on a CUDA or host device whose parts are
# copied from CUDA or host devices is a join: each part copied once, straight into its range
# (exec/join.rs, backend/join.rs, backend/cuda/join.rs). Its tests (joins on one and on two
# virtual CUDA devices, lib, cuda_copies with the copies' new `_into` cores, device_groups with
# both bridges, typed, the fault sweep on two virtual CUDA devices); perf_base (d85b6a3, main
# before) against perf, two interleaved rounds of all_gather and all_to_all of cuda:0,cpu:0 and of
# two virtual CUDA devices and cpu:0 from 4 KiB to 256 MiB; anchors.py in the same command.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t joins joins 60
COLLECTIVES_CUDA_DEVICES=0,0 t joins2 joins 60
t lib lib 120 --test-threads 2
t cuda_copies cuda_copies 60
t groups device_groups 150 --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 100 --test-threads 2 cuda_vulkan_and_host cuda_and_vulkan
t typed typed 60
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100
grep -h -E "panicked|FAILED|total:" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 90 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2; do
  for b in perf_base perf; do
    p ${b}_ch_$r $b --op all_gather,all_to_all --devices cuda:0,cpu:0 --sizes 4K,1M,16M,256M --iters 20 --warmup 3
    COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_cch_$r $b --op all_gather,all_to_all --devices cuda:0,cuda:1,cpu:0 --sizes 4K,1M,16M,256M --iters 20 --warmup 3
  done
done
timeout 120 python3 $G/anchors.py --sizes 4K,1M,16M,256M,1G --iters 20 > $L/anchors.log 2>&1; tail -8 $L/anchors.log
date
