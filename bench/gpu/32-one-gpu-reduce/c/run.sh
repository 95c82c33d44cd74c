#!/bin/bash
# GPU run 32c (one H200): 9105452 (0f817a6, and the star all_to_all on logical devices of one
# GPU; all_to_all of CUDA devices takes Star or OneShot), the tree as submitted but for docs —
# the star all_to_all against the one-shot on 3, 4 and 8 virtual devices at 4 KiB, 1, 4, 16 and
# 256 MiB per shard, Auto beside; anchors.py in the same command; the tests: plans on three
# virtual devices and on the physical mapping, cuda_native on 2, 3, 4 and 8 (the automatic choice
# printed), the fault sweep on two virtual CUDA devices, lib, device_groups, typed, cuda_faults.
# Invoked as: timeout -k 5 480 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
p() { local tag=$1 b=$2; shift 2; local s=$(date +%s); timeout 120 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$? $(( $(date +%s) - s ))s $(grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log | awk '{printf "%s %s %s %s #%s; ", $1, $2, $6, $7, $10}')"; grep -E '^error|panicked' $L/$tag.log; }
devs() { seq -s, 0 $(($1-1)) | sed 's/[0-9]\+/cuda:&/g'; }
map() { printf '0,%.0s' $(seq $1) | sed 's/,$//'; }
for n in 3 4 8; do
COLLECTIVES_CUDA_DEVICES=$(map $n) p a2a_$n perf --op all_to_all --devices $(devs $n) --sizes 4K,1M,4M,16M,256M --algo auto,star,oneshot --iters 20 --warmup 3
done
timeout 40 python3 $G/anchors.py --sizes 1M --iters 10 > $L/anchors.log 2>&1; tail -1 $L/anchors.log
COLLECTIVES_CUDA_DEVICES=0,0,0 t plans3 plans 30
t plans1 plans 30
for m in 0,0 0,0,0 0,0,0,0 0,0,0,0,0,0,0,0; do
COLLECTIVES_CUDA_DEVICES=$m t native_${#m} cuda_native 90 --test-threads 2 --show-output
grep -h "devices, AllToAll" $L/t_native_${#m}.log | sort -u | tr '\n' ' '; echo
done
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 70 --show-output
grep -h "^total:\|AllToAll" $L/t_faults2.log
t lib lib 100 --test-threads 4
t groups device_groups 100 --test-threads 2
t typed typed 30
t cuda_faults cuda_faults 30 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
