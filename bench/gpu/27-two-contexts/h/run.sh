#!/bin/bash
# GPU run 27h (one H200): the tree as submitted after the final read (adbda50: one
# event::wait_on for device-side waits, Part::copied) — joins, lib, device_groups, cuda_native on
# eight virtual devices, the fault sweep on two virtual CUDA devices. Tests only, so no anchors.
# Invoked as: timeout -k 5 450 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t joins joins 120 --test-threads 2
t lib lib 150 --test-threads 4
t groups device_groups 120 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native cuda_native 120 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 150 --nocapture
grep -h -E "^total:|LEAK" $L/t_faults2.log
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
