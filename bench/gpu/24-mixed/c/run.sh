#!/bin/bash
# GPU run 24c (one H200): run 24a's change plus one fence shared by a streamed kernel's result and
# its host copies (one wait covers them), and the probes' new rows (a binary add launched raw;
# empty kernels by parameter size). Tests: the probes (release), lib, device_groups, the fault
# sweep on two virtual CUDA devices, cuda_ops. perf_base (2c83947), perf_a (run 24a's binary)
# and perf, interleaved, three rounds, at 4 KiB (perf_base and perf also at 64 and 256 MiB, where
# the direct path now issues the chunked streamed kernel); anchors.py in the same command.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
for r in 1 2; do
  t probe_$r probe 90 --ignored --test-threads 1 --nocapture backend::cuda::probe::
  grep -o "probe:.*" $L/t_probe_$r.log
done
t lib lib 150 --test-threads 2
grep -h -E "a_small_cuda_fold_of_host_shards_is_issued_directly" $L/t_lib.log
t groups device_groups 150 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 100 --nocapture
t ops cuda_ops 100 --test-threads 2
grep -h -E "panicked|FAILED|total:" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 90 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
for r in 1 2 3; do
  for b in perf_base perf_a perf; do
    p ${b}_ch_$r $b --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
    p ${b}_ch3_$r $b --op all_reduce --devices cuda:0,cpu:0,cpu:1,cpu:2 --sizes 4K --iters 500 --warmup 50
    p ${b}_lr_$r $b --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 500 --warmup 50
  done
  for b in perf_base perf; do
    p ${b}_chL_$r $b --op all_reduce --devices cuda:0,cpu:0 --sizes 64M,256M --iters 10 --warmup 2
  done
done
timeout 120 python3 $G/anchors.py --sizes 4K,1M,256M --iters 20 > $L/anchors.log 2>&1; tail -4 $L/anchors.log
date
