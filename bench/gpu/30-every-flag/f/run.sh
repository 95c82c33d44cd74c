#!/bin/bash
# GPU run 30f (one H200): the tree as submitted (d10e2a5: e, and one event::issue_flagged for the
# three kernel steps offered a flag) — the flag's tests, lib, cuda_ops, joins, cuda_native on two
# virtual devices (the star reduce_scatter's copy-out among them), device_groups (the one-pass
# all_reduce of CUDA and host devices among them). Tests only, so no anchors.
# Invoked as: timeout -k 5 240 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t flag lib 60 --nocapture backend::cuda::flag
t lib lib 60 --test-threads 4
t ops cuda_ops 40 --test-threads 2
t joins joins 30 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t native_2 cuda_native 40 --test-threads 2
t groups device_groups 80 --test-threads 4
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
