#!/bin/bash
# GPU run 31e (one H200): an experiment on 537fcaf + `experiment.diff` (here): the completion
# flag's fence in each block at GPU scope (`__threadfence`) instead of system scope, the last
# block fencing at system scope before it stores either way — `flag_scope_probe` on two and on
# eight virtual devices: flags off / system-scope fences / GPU-scope fences, rotated in one
# process (two devices twice).
# Invoked as: timeout -k 5 300 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
r=0; for devs in 0,0 0,0,0,0,0,0,0,0 0,0; do r=$((r+1))
COLLECTIVES_CUDA_DEVICES=$devs t scope_${#devs}_$r lib 100 --ignored --nocapture --exact backend::cuda::probe::flags::flag_scope_probe
grep -h "^probe:" $L/t_scope_${#devs}_$r.log | sed "s/^/$r /"
done
date
