#!/bin/bash
# GPU run 28b (one H200): host waits by the stream's signal (cuda/signal.rs, this tree) — the
# tests (lib with the signal's own test, cuda_faults, cuda_native on eight virtual devices,
# device_groups, typed, cuda_copies, cuda_ops, joins, the fault sweep on two virtual CUDA
# devices); the layer probes with COLLECTIVES_CUDA_SIGNAL=0 and on; perf 4 KiB rows with the
# signal off and on in the same binary, four interleaved rounds, and 64 MiB all_reduce of
# cuda:0,cpu:0 (a long wait); anchors.py in the same command.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$? $(grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log | awk '{printf "%s %s %s %s us; ", $1, $2, $6, $7}')"; grep -E '^error|panicked' $L/$tag.log; }
t signal lib 60 --nocapture backend::cuda::signal
t lib lib 150 --test-threads 4
t cuda_faults cuda_faults 90 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native cuda_native 150 --test-threads 2
t groups device_groups 120 --test-threads 2
t typed typed 60
t copies cuda_copies 60
t ops cuda_ops 90 --test-threads 2
t joins joins 120 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100
grep -h "^total:" $L/t_faults2.log
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
for r in 1 2; do for sig in 0 1; do
for probe in local_reduce_layers_probe mixed_all_reduce_layers_probe; do
COLLECTIVES_CUDA_SIGNAL=$sig t ${probe}_${sig}_$r lib 100 --ignored --nocapture --exact backend::cuda::probe::$probe
grep -h "^probe:" $L/t_${probe}_${sig}_$r.log | grep -E "realize|backend|one-pass" | sed "s/^/signal=$sig $r /"
done; done; done
for r in 1 2 3 4; do for sig in 0 1; do
export COLLECTIVES_CUDA_SIGNAL=$sig
p lr_${sig}_$r perf --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
p ch_${sig}_$r perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K,64M --iters 1000 --warmup 50
COLLECTIVES_CUDA_DEVICES=0,0 p cc_${sig}_$r perf --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 2000 --warmup 100
p cv_${sig}_$r perf --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K --iters 1000 --warmup 100
done; done
unset COLLECTIVES_CUDA_SIGNAL
timeout 40 python3 $G/anchors.py --sizes 1M,64M --iters 20 > $L/anchors.log 2>&1; tail -3 $L/anchors.log
date
