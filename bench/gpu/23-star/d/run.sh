#!/bin/bash
# GPU run 23d (one H200): main at fec464a, the star all_gather, broadcast and reduce_scatter of CUDA devices as one
# call of the leader (the root), on top of run c's build (0f4d415). Tests: lib (the copy arm of the
# multi-output launch), cuda_native on 8 virtual CUDA devices (every collective through the star),
# device_groups, the fault sweep on two virtual CUDA devices, collective_props on two virtual CUDA
# devices, joins, typed; then the star against the one-shot for broadcast, all_gather and
# reduce_scatter on 2, 4 and 8 virtual CUDA devices from 4 KiB to 16 MiB, perf_c (run c's
# binary) against perf for the automatic all_gather on 8 virtual devices; anchors.py in the same
# command.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 120 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native8 cuda_native 180 --test-threads 2 --nocapture
t groups device_groups 150 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100 --nocapture
COLLECTIVES_CUDA_DEVICES=0,0,0 t props3 collective_props 150 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t joins2 joins 60
t typed typed 60
grep -h -E "panicked|FAILED|total:" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 90 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2; do
  for n in 2 4 8; do
    devs=$(seq -s, -f 'cuda:%g' 0 $((n-1))); m=$(printf '0%.0s,' $(seq $n) | sed 's/,$//')
    for op in broadcast all_gather reduce_scatter; do
      COLLECTIVES_CUDA_DEVICES=$m p ${op}${n}_$r perf --op $op --devices $devs --algo star,oneshot --sizes 4K,64K,1M,16M --iters 30 --warmup 5
    done
  done
  for b in perf_c perf; do
    COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 p ${b}_ag8_$r $b --op all_gather --devices cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7 --sizes 4K,64K,512K --iters 100 --warmup 10
  done
done
timeout 120 python3 $G/anchors.py --sizes 4K,1M,256M --iters 20 > $L/anchors.log 2>&1; tail -4 $L/anchors.log
date
