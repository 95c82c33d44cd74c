#!/bin/bash
# GPU run 28e (one H200): completion flags stored by one-block reduce kernels (cuda/flag.rs, this
# tree) — the tests (lib with the flag's own, cuda_faults, cuda_native on eight virtual devices,
# device_groups, typed, cuda_copies, cuda_ops, joins, the fault sweep on two virtual CUDA
# devices); `flag_on_off_probe` (flags against events alone, alternated in one process) on 8 and
# on 2 virtual devices, three runs each; perf's 4 KiB rows, `perf_base` (90a96ac) against `perf`,
# four interleaved rounds; anchors.py in the same command.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$? $(grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log | awk '{printf "%s %s %s %s us; ", $1, $2, $6, $7}')"; grep -E '^error|panicked' $L/$tag.log; }
t flag lib 60 --nocapture backend::cuda::flag
for r in 1 2 3; do for devs in 0,0,0,0,0,0,0,0 0,0; do
COLLECTIVES_CUDA_DEVICES=$devs t ab_${#devs}_$r lib 60 --ignored --nocapture --exact backend::cuda::probe::flag_on_off_probe
grep -h "^probe:" $L/t_ab_${#devs}_$r.log | sed "s/^/$r /"
done; done
for r in 1 2 3 4; do for b in perf_base perf; do
p ${b}_lr_$r $b --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
p ${b}_ch_$r $b --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
COLLECTIVES_CUDA_DEVICES=0,0 p ${b}_cc_$r $b --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 2000 --warmup 100
p ${b}_cv_$r $b --op all_reduce --devices cuda:0,vulkan:0 --sizes 4K --iters 1000 --warmup 100
done; done
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
timeout 40 python3 $G/anchors.py --sizes 1M --iters 20 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
