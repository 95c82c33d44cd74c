#!/bin/bash
# GPU run 28a (one H200): how the host learns a 4 KiB kernel finished (`completion_signal_probe`:
# stream synchronize, event synchronize, a flag the kernel writes into mapped pinned memory, a
# flag the stream writes); the layer probes of local_reduce and of the cuda:0,cpu:0 all_reduce;
# perf at 4 KiB / 64 KiB / 1 MiB: all_reduce of cuda:0,cpu:0 (folded on CUDA) against
# cpu:0,cuda:0 (the leader cpu:0: folded on the host), local_reduce on cuda:0; four interleaved
# rounds; anchors.py in the same command. Tree: 90a96ac + the new probe.
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$? $(grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log | awk '{printf "%s %s %s %s us; ", $1, $2, $6, $7}')"; grep -E '^error|panicked' $L/$tag.log; }
for r in 1 2; do
for probe in completion_signal_probe local_reduce_layers_probe mixed_all_reduce_layers_probe; do
t ${probe}_$r lib 100 --ignored --nocapture --exact backend::cuda::probe::$probe
grep -h "^probe:" $L/t_${probe}_$r.log | sed "s/^/$r /"
done; done
for r in 1 2 3 4; do
p ch_$r perf --op all_reduce --devices cuda:0,cpu:0 --sizes 4K,64K,1M --iters 2000 --warmup 100
p hc_$r perf --op all_reduce --devices cpu:0,cuda:0 --sizes 4K,64K,1M --iters 2000 --warmup 100
p lr_$r perf --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
done
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
timeout 40 python3 $G/anchors.py --sizes 1M --iters 20 > $L/anchors.log 2>&1; tail -3 $L/anchors.log
date
