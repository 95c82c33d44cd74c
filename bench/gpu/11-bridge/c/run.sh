#!/bin/bash
# GPU run 11c (one H200): the device bridge with direct copies (a Vulkan tensor buffer of >= 1 MiB
# has exportable memory of its own, CUDA copies straight into / out of it). Timing probe, lib
# tests, every collective x dtype on cuda:0+vulkan:0 and cuda:0+vulkan:0+cpu:0 through both
# bridges, anchors.py, perf bridge vs host.
# Invoked as: timeout -k 5 570 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t probe lib 90 device_ring_timing --ignored --nocapture
grep -E "transfer round" $L/t_probe.log
t lib lib 150 --test-threads 2
t groups device_groups 150 cuda_and_vulkan cuda_vulkan_and_host --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 150 cuda_and_vulkan cuda_vulkan_and_host --test-threads 2
grep -h -E "panicked|FAILED|wrong|warning" $L/t_*.log | head -30
s=$(date +%s); timeout 60 python3 $G/anchors.py --sizes 4K,1M,16M,256M --iters 20 --json $L/anchors.json > $L/anchors.log 2>&1; echo "anchors rc=$? $(( $(date +%s)-s ))s"
grep -E "ceil_" $L/anchors.log | head -6
p() { local tag=$1 lim=$2; shift 2; local s=$(date +%s)
  timeout $lim $G/perf "$@" --json $L/perf_$tag.json > $L/perf_$tag.log 2>&1; echo "perf $tag rc=$? $(( $(date +%s)-s ))s"; }
N="--dtype f32 -n 20 -w 5"
for b in auto host; do
  export COLLECTIVES_BRIDGE=$b
  p bc_cv_$b 60 --op broadcast --devices cuda:0,vulkan:0 -b 4K -e 1G -f 4 $N
  p bc_vc_$b 60 --op broadcast --devices vulkan:0,cuda:0 -b 4K -e 1G -f 4 $N
  p ar_cv_$b 60 --op all_reduce --devices cuda:0,vulkan:0 -b 4K -e 256M -f 4 $N
  p ar_cvh_$b 60 --op all_reduce --devices cuda:0,vulkan:0,cpu:0 -b 4K -e 256M -f 4 $N
done
unset COLLECTIVES_BRIDGE
for f in $L/perf_*.log; do echo "== $f"; grep -vE "^#" $f | awk '{print $2, $7, $8, $9, $10}' | tr '\n' ';'; echo; done
