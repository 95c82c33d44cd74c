#!/bin/bash
# GPU run 28d (one H200): signals against events alone in one process, alternated in blocks of
# 50 calls over 40 rounds (`signal_on_off_probe`, a0c00d0 + the probe): local_reduce, the
# cuda:0,cpu:0 all_reduce, and every collective on 8 and on 2 virtual CUDA devices; three runs
# of each. Probes only, so no anchors.
# Invoked as: timeout -k 5 200 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
for r in 1 2 3; do for devs in 0,0,0,0,0,0,0,0 0,0; do
COLLECTIVES_CUDA_DEVICES=$devs t ab_${#devs}_$r lib 60 --ignored --nocapture --exact backend::cuda::probe::signal_on_off_probe
grep -h "^probe:" $L/t_ab_${#devs}_$r.log | sed "s/^/$r /"
done; done
date
