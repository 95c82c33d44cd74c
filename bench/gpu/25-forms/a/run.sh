#!/bin/bash
# GPU run 25a (one H200): the reduce kernel's forms (kernels.cu `fold_at`: the loop over inputs,
# or batches of 1..16 loads issued together), on top of 5eb4615. Tests: lib (every form, dtype,
# op and count against the loop's bits and f64), cuda_native on 8 virtual CUDA devices with the
# default choice and with every launch forced to batches of 8, cuda_ops. The forms probe (raw
# launches by dtype, input count and size). perf_base (5eb4615) against perf with
# COLLECTIVES_REDUCE_BATCH unset (the default: batches of 8 from 4 inputs of 2 MiB), 0, 4 and 16:
# the one-shot and the two-shot all_reduce of 8 virtual devices, two interleaved rounds;
# anchors.py in the same command.
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
V8=0,0,0,0,0,0,0,0
t probe probe 90 --ignored --exact --test-threads 1 --nocapture backend::cuda::probe::reduce_forms_probe
grep -o "probe:.*" $L/t_probe.log
t lib lib 200 --test-threads 4
COLLECTIVES_CUDA_DEVICES=$V8 t native8 cuda_native 120 --test-threads 2
COLLECTIVES_REDUCE_BATCH=8 COLLECTIVES_CUDA_DEVICES=$V8 t native8_b8 cuda_native 120 --test-threads 2
t ops cuda_ops 100 --test-threads 2
grep -h -E "panicked|FAILED|warning" $L/t_*.log | head -20
p() { local tag=$1 b=$2; shift 2; timeout 90 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
D8=cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7
export COLLECTIVES_CUDA_DEVICES=$V8
for r in 1 2; do
  for f in base auto 0 4 16; do
    b=perf; [ $f = base ] && b=perf_base
    if [ $f = base ] || [ $f = auto ]; then unset COLLECTIVES_REDUCE_BATCH; else export COLLECTIVES_REDUCE_BATCH=$f; fi
    p os8_${f}_$r $b --op all_reduce --devices $D8 --algo oneshot --sizes 1M,4M,16M,64M --iters 20 --warmup 3
    p ts8_${f}_$r $b --op all_reduce --devices $D8 --algo twoshot --sizes 16M,64M,256M --iters 10 --warmup 2
  done
done
unset COLLECTIVES_REDUCE_BATCH COLLECTIVES_CUDA_DEVICES
timeout 60 python3 $G/anchors.py --sizes 1M,64M --iters 20 > $L/anchors.log 2>&1; tail -6 $L/anchors.log
date
