#!/bin/bash
# GPU run 23e (one H200): main at 5481581 (Auto takes the star reduce_scatter and broadcast on
# three or more CUDA devices below 1 MiB). Tests: cuda_native on 8 virtual CUDA devices (the
# automatic choice among them), plans on 3, lib, device_groups, the fault sweep on two virtual
# CUDA devices, typed; perf_c (run c's binary, 0f4d415) against perf for the automatic broadcast
# and reduce_scatter on 8 virtual devices; anchors.py in the same command.
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native8 cuda_native 180 --test-threads 2 --nocapture
COLLECTIVES_CUDA_DEVICES=0,0,0 t plans plans 60
t lib lib 120 --test-threads 2
t groups device_groups 150 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100 --nocapture
t typed typed 60
grep -h -E "panicked|FAILED|total:" $L/t_*.log | head -20
grep -h "devices, " $L/t_native8.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 90 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
D8=cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7
for r in 1 2; do
  for b in perf_c perf; do
    COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 p ${b}_auto8_$r $b --op broadcast,reduce_scatter --devices $D8 --sizes 4K,64K,512K --iters 100 --warmup 10
  done
done
timeout 120 python3 $G/anchors.py --sizes 4K,1M --iters 20 > $L/anchors.log 2>&1; tail -3 $L/anchors.log
date
