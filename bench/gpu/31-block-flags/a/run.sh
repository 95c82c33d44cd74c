#!/bin/bash
# GPU run 31a (one H200): this tree (a flagged launch of more than one block on the compute
# stream stores the flag from its last block, counted in the stream's block counter) — the
# flag's tests and the launch module's; `flag_on_off_probe` on 2 virtual devices (twice) and on
# 8 (flags off = every launch of more blocks waited for by its event, as before this change);
# perf's issue-14 rows at 4 KiB and the local_reduce at 64 KiB and 1 MiB, two rounds, and
# anchors.py in the same command; the tests: lib, cuda_ops, cuda_copies, joins, cuda_native on
# 2, 3, 4 and 8 virtual devices, cuda_faults, typed, the fault sweep on two virtual CUDA devices,
# device_groups, vulkan_collectives.
# Invoked as: timeout -k 5 590 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$? $(grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log | awk '{printf "%s %s %s %s us; ", $1, $2, $6, $7}')"; grep -E '^error|panicked' $L/$tag.log; }
t flag lib 120 --nocapture backend::cuda::flag
t launch lib 90 backend::cuda::launch
for r in 1 2; do for devs in 0,0 0,0,0,0,0,0,0,0; do
[ $r = 2 ] && [ ${#devs} = 15 ] && continue
COLLECTIVES_CUDA_DEVICES=$devs t ab_${#devs}_$r lib 90 --ignored --nocapture --exact backend::cuda::probe::flag_on_off_probe
grep -h "^probe:" $L/t_ab_${#devs}_$r.log | sed "s/^/$r /"
done; done
for r in 1 2; do
p lr_$r perf --op local_reduce --devices cuda:0,cpu:0 --sizes 4K,64K,1M --iters 2000 --warmup 100
p ch_$r perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
COLLECTIVES_CUDA_DEVICES=0,0 p cc_$r perf --op all_reduce --devices cuda:0,cuda:1 --sizes 4K,1M --iters 2000 --warmup 100
p c8_$r perf --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 --sizes 4K --iters 2000 --warmup 100
done
timeout 40 python3 $G/anchors.py --sizes 1M --iters 20 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
t lib lib 150 --test-threads 4
t ops cuda_ops 60 --test-threads 2
t copies cuda_copies 40
t joins joins 60 --test-threads 2
for devs in 0,0 0,0,0 0,0,0,0 0,0,0,0,0,0,0,0; do
COLLECTIVES_CUDA_DEVICES=$devs t native_${#devs} cuda_native 80 --test-threads 2
done
t cuda_faults cuda_faults 30 --test-threads 2
t typed typed 30
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 70
grep -h "^total:" $L/t_faults2.log
t groups device_groups 90 --test-threads 2
t vcoll vulkan_collectives 60 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
