#!/bin/bash
# GPU run 30d (one H200): the tree as submitted (76d4a0f: b, and an empty launch loads no kernel)
# — the flag's and the launch module's tests, lib, cuda_ops (empty tensors through every op
# among them), cuda_copies, joins, cuda_native on 2 and on 8 virtual devices, cuda_faults, the
# fault sweep on two virtual CUDA devices; `flag_on_off_probe` on two virtual devices once.
# Tests and a probe only, so no anchors.
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t flag lib 60 --nocapture backend::cuda::flag
t launch lib 90 --test-threads 4 backend::cuda::launch
COLLECTIVES_CUDA_DEVICES=0,0 t ab lib 60 --ignored --nocapture --exact backend::cuda::probe::flag_on_off_probe
grep -h "^probe:" $L/t_ab.log
t lib lib 120 --test-threads 4
t ops cuda_ops 60 --test-threads 2
t copies cuda_copies 40
t joins joins 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t native_2 cuda_native 60 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native_8 cuda_native 80 --test-threads 2
t cuda_faults cuda_faults 30 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 70
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
