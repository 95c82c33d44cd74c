#!/bin/bash
# GPU run 28g (one H200): copyseg launches store the completion flag too (this tree) — the flag's
# tests, lib, cuda_faults, cuda_native on eight virtual devices, device_groups, cuda_ops, joins,
# the fault sweep on two virtual CUDA devices; `flag_on_off_probe` on 8 and on 2 virtual devices,
# two runs each. Tests and probes only, so no anchors.
# Invoked as: timeout -k 5 390 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t flag lib 60 --nocapture backend::cuda::flag
for r in 1 2; do for devs in 0,0,0,0,0,0,0,0 0,0; do
COLLECTIVES_CUDA_DEVICES=$devs t ab_${#devs}_$r lib 60 --ignored --nocapture --exact backend::cuda::probe::flag_on_off_probe
grep -h "^probe:" $L/t_ab_${#devs}_$r.log | sed "s/^/$r /"
done; done
t lib lib 120 --test-threads 4
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native cuda_native 90 --test-threads 2
t groups device_groups 100 --test-threads 2
t ops cuda_ops 40 --test-threads 2
t joins joins 30 --test-threads 2
t cuda_faults cuda_faults 30 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 70
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
