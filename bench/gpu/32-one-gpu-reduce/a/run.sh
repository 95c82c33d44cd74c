#!/bin/bash
# GPU run 32a (one H200): bb96eeb + on logical CUDA devices of one GPU Auto takes the star reduce
# at every size (uncommitted when run; committed as the next commit) — the reduce's star against
# its ring on 3, 4 and 8 virtual devices at 4 KiB, 1, 16 and 256 MiB, Auto beside; host profiles
# (perf_prof: the same tree with --features profile, symbols kept) of the 4 KiB star all_reduce on
# 2 and 8 virtual devices, the same rows unprofiled; all_to_all (hops joined) beside all_gather
# (Auto) on 2, 4 and 8 virtual devices; anchors.py in the same command; the tests
# last run before f393674 or not this week: plans on three virtual devices, lib's algo test,
# cuda_native on 3 and 4, typed, vulkan_collectives, vulkan_ops, the fault sweep on two virtual
# CUDA devices, cuda_faults.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
p() { local tag=$1 b=$2; shift 2; local s=$(date +%s); timeout 120 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$? $(( $(date +%s) - s ))s $(grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log | awk '{printf "%s %s %s %s #%s; ", $1, $2, $6, $7, $10}')"; grep -E '^error|panicked' $L/$tag.log; }
devs() { seq -s, 0 $(($1-1)) | sed 's/[0-9]\+/cuda:&/g'; }
map() { printf '0,%.0s' $(seq $1) | sed 's/,$//'; }
COLLECTIVES_CUDA_DEVICES=0,0,0 t plans3 plans 30
t algo lib 30 collective::algo
for n in 3 4 8; do
COLLECTIVES_CUDA_DEVICES=$(map $n) p reduce_$n perf --op reduce --devices $(devs $n) --sizes 4K,1M,16M,256M --algo auto,star,ring --iters 10 --warmup 2
done
for n in 2 4 8; do
COLLECTIVES_CUDA_DEVICES=$(map $n) p a2a_$n perf --op all_to_all,all_gather --devices $(devs $n) --sizes 4K,1M,16M --iters 20 --warmup 3
done
for n in 2 8; do
COLLECTIVES_CUDA_DEVICES=$(map $n) p ar_$n perf --op all_reduce --devices $(devs $n) --sizes 4K --iters 2000 --warmup 100
COLLECTIVES_CUDA_DEVICES=$(map $n) p prof_$n perf_prof --op all_reduce --devices $(devs $n) --sizes 4K --iters 200000 --warmup 100 --profile $L/prof_$n
done
timeout 40 python3 $G/anchors.py --sizes 1M --iters 10 > $L/anchors.log 2>&1; tail -1 $L/anchors.log
for m in 0,0,0 0,0,0,0; do
COLLECTIVES_CUDA_DEVICES=$m t native_${#m} cuda_native 80 --test-threads 2 --show-output
grep -h "devices, " $L/t_native_${#m}.log | sort -u | tr '\n' ' '; echo
done
t typed typed 30
t vcoll vulkan_collectives 60 --test-threads 2
t cuda_faults cuda_faults 30 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 70
grep -h "^total:" $L/t_faults2.log
t vops vulkan_ops 200 --test-threads 8
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
