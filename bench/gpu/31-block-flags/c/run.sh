#!/bin/bash
# GPU run 31c (one H200): 56903bc (on logical CUDA devices of one GPU, Auto takes the star at every
# size) — the star against the one-shot (and the two-shot all_reduce) on 2, 4 and 8 virtual
# devices from 1 MiB to 256 MiB, every collective the choice covers, with Auto beside the
# all_reduce; anchors.py in the same command; the tests: plans on three virtual devices and on
# the physical mapping, lib's algo test, cuda_native on 2, 3, 4 and 8 virtual devices.
# Invoked as: timeout -k 5 590 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
p() { local tag=$1 b=$2; shift 2; local s=$(date +%s); timeout 120 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$? $(( $(date +%s) - s ))s $(grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log | awk '{printf "%s %s %s %s #%s; ", $2, $6, $7, $10}')"; grep -E '^error|panicked' $L/$tag.log; }
COLLECTIVES_CUDA_DEVICES=0,0,0 t plans3 plans 30
t plans1 plans 30
t algo lib 30 collective::algo
S=1M,4M,16M,256M
for n in 2 4 8; do
devs=$(seq -s, 0 $((n-1)) | sed 's/[0-9]\+/cuda:&/g'); map=$(printf '0,%.0s' $(seq $n) | sed 's/,$//')
COLLECTIVES_CUDA_DEVICES=$map p ar_$n perf --op all_reduce --devices $devs --sizes $S --algo auto,star,oneshot,twoshot --iters 10 --warmup 2
[ $n = 2 ] && continue
for op in reduce_scatter broadcast all_gather; do
COLLECTIVES_CUDA_DEVICES=$map p ${op}_$n perf --op $op --devices $devs --sizes $S --algo star,oneshot --iters 10 --warmup 2
done; done
timeout 60 python3 $G/anchors.py --sizes 1M,256M --iters 10 > $L/anchors.log 2>&1; tail -3 $L/anchors.log
for devs in 0,0 0,0,0 0,0,0,0 0,0,0,0,0,0,0,0; do
COLLECTIVES_CUDA_DEVICES=$devs t native_${#devs} cuda_native 80 --test-threads 2
grep -h "devices, " $L/t_native_${#devs}.log | sort -u | tr '\n' ' '; echo
done
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
