#!/bin/bash
# GPU run F: the staged chain with batched destination submissions: its tests, the ring probe
# (../5-overhead/probes/ring_probe.rs, compiled into lib as a child of backend/staged/ring.rs)
# and the perf tool (both ways), for three ring geometries; anchors.py for the ceilings.
# Invoked as: timeout -k 5 400 bash .gpu/run_f.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t() { local name=$1 lim=$2; shift 2; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$name.log 2>&1; local rc=$?
  printf "%-20s rc=%-3s %4ss  %s\n" $name $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$name.log | tail -1)"; }
t lib 90 --test-threads 4
t cuda_copies 90
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
s=$(date +%s); timeout 60 python3 $G/anchors.py --sizes 256M,1G --iters 20 --json $L/anchors.json > $L/anchors.log 2>&1; echo "anchors rc=$? $(( $(date +%s)-s ))s"; grep -o '"bytes": [0-9]*\|"ceil_h2d_GBps": [0-9.]*\|"ceil_d2h_GBps": [0-9.]*' $L/anchors.log | tr '\n' ' '; echo
p() { local tag=$1 lim=$2; shift 2; local s=$(date +%s)
  timeout $lim $G/perf "$@" --json $L/perf_$tag.json > $L/perf_$tag.log 2>&1; echo "perf $tag rc=$? $(( $(date +%s)-s ))s $(grep -E '^ +[0-9]' $L/perf_$tag.log | awk '{printf "%s:%s ", $1, $7}')"; }
S="--sizes 256M,1G --iters 10 --warmup 3"
for g in 16777216:8 33554432:8 33554432:4; do c=${g%:*}; n=${g#*:}; export COLLECTIVES_STAGED_CHUNK_BYTES=$c COLLECTIVES_STAGED_SLOTS=$n
  echo "== ring ${c}x$n"
  timeout 60 $G/lib --ignored --nocapture ring_hop_probe > $L/ring_probe_${c}_$n.log 2>&1; grep -E "RING|panicked" $L/ring_probe_${c}_$n.log
  for k in 1 2; do
    p staged_${c}_${n}_$k 40 --op broadcast --devices cuda:0,vulkan:1 $S
    p staged_back_${c}_${n}_$k 40 --op broadcast --devices vulkan:1,cuda:0 $S
  done
done
