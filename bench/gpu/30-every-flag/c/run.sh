#!/bin/bash
# GPU run 30c (one H200): the same build as 30b — the tests run a left out or cut short:
# vulkan_ops (past its 90 s limit in a), vulkan_collectives, device_groups, the fault sweep on two
# virtual CUDA devices. Tests only, so no anchors.
# Invoked as: timeout -k 5 500 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t vops vulkan_ops 300 --test-threads 8
t vcoll vulkan_collectives 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 70
t groups device_groups 100 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
