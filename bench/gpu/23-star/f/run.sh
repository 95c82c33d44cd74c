#!/bin/bash
# GPU run 23f (one H200): the reduce kernel's output stores unrolled over MAXK (each output
# pointer read at a fixed parameter offset), on top of 5481581. Tests: lib (the multi-output
# kernel test), cuda_native on 8 virtual CUDA devices. perf_base (8718ef9), perf_c (run c's
# binary, 0f4d415: the output loop indexed at run time) and perf (this change), interleaved:
# the one-shot all_reduce of 8 virtual devices at 1 and 4 MiB, the star at 4 KiB and 256 KiB,
# local_reduce at 4 KiB and 16 MiB; anchors.py in the same command.
# Invoked as: timeout -k 5 300 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 120 --test-threads 2 backend::cuda
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native8 cuda_native 120 --test-threads 2 all_reduce
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
D8=cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7
export COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0
for r in 1 2; do
  for b in perf_base perf_c perf; do
    p ${b}_os_$r $b --op all_reduce --devices $D8 --algo oneshot --sizes 1M,4M --iters 50 --warmup 5
    p ${b}_lr_$r $b --op local_reduce --devices cuda:0,cuda:1 --sizes 4K,16M --iters 200 --warmup 20
  done
  for b in perf_c perf; do
    p ${b}_st_$r $b --op all_reduce --devices $D8 --algo star --sizes 4K,256K --iters 100 --warmup 10
  done
done
unset COLLECTIVES_CUDA_DEVICES
timeout 60 python3 $G/anchors.py --sizes 4K,1M --iters 20 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
