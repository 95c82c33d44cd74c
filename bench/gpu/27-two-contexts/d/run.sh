#!/bin/bash
# GPU run 27d (one H200): a join computing a part of its own device's kernel in its range (this
# tree) — the joins tests (CUDA devices, pinned host memory), the timing probe against the join
# before it (`joins_base`, 87fa7ff's library) on two logical CUDA devices, three interleaved
# rounds; lib, device_groups, cuda_native (8 virtual devices), typed, cuda_copies, the fault
# sweep on two virtual CUDA devices; five more interleaved rounds of the 4 KiB all_reduce of
# cuda:0,cpu:0 (`perf_base` 5006b32 against `perf`); anchors.py in the same command.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$? $(grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log | awk '{printf "%s %s %s %s us; ", $1, $2, $6, $7}')"; grep -E '^error|panicked' $L/$tag.log; }
t joins joins 200 --test-threads 2
for r in 1 2 3; do for b in joins_base joins; do
COLLECTIVES_CUDA_DEVICES=0,0 t probe_${b}_$r $b 100 --ignored --nocapture --exact join_of_a_computed_part_timing_probe
grep -h "^probe:" $L/t_probe_${b}_$r.log | sed "s/^/$b $r /"
done; done
for r in 1 2 3 4 5; do for b in perf_base perf; do
p ${b}_ch_$r $b --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 3000 --warmup 100
done; done
t lib lib 150 --test-threads 4
t groups device_groups 120 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native cuda_native 150 --test-threads 2
t typed typed 60
t copies cuda_copies 60
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100
grep -h "^total:" $L/t_faults2.log
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
timeout 40 python3 $G/anchors.py --sizes 1M,64M --iters 20 > $L/anchors.log 2>&1; tail -3 $L/anchors.log
date
