#!/bin/bash
# GPU run 28f (one H200): the tree as submitted (7a50185: run e's flags, an empty reduce taking
# none) — the flag's tests, lib, cuda_faults, cuda_native on eight virtual devices,
# device_groups, cuda_ops, joins, the fault sweep on two virtual CUDA devices; the on/off probe
# once more on two virtual devices. Tests and probe only, so no anchors.
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t flag lib 60 --nocapture backend::cuda::flag
COLLECTIVES_CUDA_DEVICES=0,0 t ab lib 60 --ignored --nocapture --exact backend::cuda::probe::flag_on_off_probe
grep -h "^probe:" $L/t_ab.log
t lib lib 150 --test-threads 4
t cuda_faults cuda_faults 90 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native cuda_native 150 --test-threads 2
t groups device_groups 120 --test-threads 2
t ops cuda_ops 90 --test-threads 2
t joins joins 120 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100
grep -h "^total:" $L/t_faults2.log
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
