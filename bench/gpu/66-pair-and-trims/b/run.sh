#!/bin/bash
# Run 66b (prepared in run a's session, where no machine started for it; run in the next): run a's
# CUDA rows read two ways in every tree (7.7-8.0 or 8.7-9.5 us for the same row and build, process
# by process). Is it where the process runs? The topology, then four 4 KiB rows (local_reduce of one
# shard and of two on cuda:0, two virtual devices' all_reduce, cuda:0,cpu:0), each process bound
# (taskset) to all CPUs, to each NUMA node's CPUs, or to one CPU, three rounds; then the layers
# probe twice, its rows now timed in turn (run a's binary add and the same binary kernel read 0.77
# us apart in consecutive rows). Each row's p10-p90 (the perf tool's JSON, printed by steps.sh) says
# whether a process's own calls take both levels. Anchors (NCCL, torch.cuda.comm) last, in the same
# command.
# Staged by: bash bench/gpu/stage.sh bench/gpu/66-pair-and-trims/b - lib
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader
nvidia-smi topo -m | head -8
lscpu | grep -E "^CPU\(s\)|Model name|Thread|Socket|NUMA"
export REQUIRE_CUDA=1
I="--sizes 4K --iters 1000 --warmup 100"
nc=$(nproc)
places="all"
for n in $(lscpu -p=NODE | grep -v '^#' | sort -un); do places="$places n$n"; done
for c in 0 3 7 11 15; do [ $c -lt $nc ] && places="$places c$c"; done
cpus() { case $1 in all) echo 0-$((nc - 1));; n*) lscpu -p=CPU,NODE | grep -v '^#' | awk -F, -v n=${1#n} '$2 == n {print $1}' | paste -sd,;; c*) echo ${1#c};; esac; }
for pl in $places; do echo "$pl: $(cpus $pl)"; done
for r in 1 2 3; do
  for pl in $places; do
    (taskset -cp $(cpus $pl) $BASHPID > /dev/null
     p ${pl}_lr_$r perf --op local_reduce --devices cuda:0 $I
     COLLECTIVES_CUDA_DEVICES=0,0 p ${pl}_lr2_$r perf --op local_reduce --devices cuda:0,cuda:1 $I
     COLLECTIVES_CUDA_DEVICES=0,0 p ${pl}_v2_$r perf --op all_reduce --devices cuda:0,cuda:1 $I
     p ${pl}_ch_$r perf --op all_reduce --devices cuda:0,cpu:0 $I)
  done
done
for i in 1 2; do
  timeout 60 $G/lib --ignored --nocapture --exact backend::cuda::probe::local_reduce_layers_probe \
    > $L/layers_$i.log 2>&1; grep -E "^probe|panicked" $L/layers_$i.log
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
date
