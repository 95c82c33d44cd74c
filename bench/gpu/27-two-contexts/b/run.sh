#!/bin/bash
# GPU run 27b (one H200): host profiles (perf --profile, pprof at 4999 Hz) of the 4 KiB calls
# issue 14 times: all_reduce of cuda:0,cpu:0, local_reduce on cuda:0, the all_reduce of two
# virtual CUDA devices; the same rows unprofiled beside; anchors.py in the same command.
# Invoked as: timeout -k 5 200 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2; do
p ch_$r perf_prof --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 3000 --warmup 100
p lr_$r perf_prof --op local_reduce --devices cuda:0 --sizes 4K --iters 3000 --warmup 100
COLLECTIVES_CUDA_DEVICES=0,0 p v2_$r perf_prof --op all_reduce --devices cuda:0,cuda:1 --algo oneshot --sizes 4K --iters 3000 --warmup 100
done
p ch_prof perf_prof --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 60000 --warmup 100 --profile $L/prof_ch
p lr_prof perf_prof --op local_reduce --devices cuda:0 --sizes 4K --iters 60000 --warmup 100 --profile $L/prof_lr
COLLECTIVES_CUDA_DEVICES=0,0 p v2_prof perf_prof --op all_reduce --devices cuda:0,cuda:1 --algo oneshot --sizes 4K --iters 60000 --warmup 100 --profile $L/prof_v2
for f in $L/prof_*/*.txt; do echo "== $f"; sed -n 1,45p $f; done
timeout 40 python3 $G/anchors.py --sizes 1M --iters 20 > $L/anchors.log 2>&1; tail -3 $L/anchors.log
date
