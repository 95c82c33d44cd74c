#!/bin/bash
# GPU run 11d (one H200): main after merging the fault sweep and the bridge's fallback. Lib tests
# (failpoints build), the bridge's groups, the fault sweep on CUDA groups (virtual cuda:0,cuda:1 of
# the one GPU, and cuda+cpu+vulkan through the bridge), and perf with COLLECTIVES_LOG=info.
# Invoked as: timeout -k 5 570 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 150 --test-threads 2
t groups device_groups 150 cuda_and_vulkan cuda_vulkan_and_host --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 150 cuda_and_vulkan cuda_vulkan_and_host --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults faults 240 --nocapture
grep -E "^(sweep|  |total|cuda|cpu|vulkan)" $L/t_faults.log | head -80
grep -h -E "panicked|FAILED|wrong|warning" $L/t_*.log | head -30
s=$(date +%s); timeout 60 python3 $G/anchors.py --sizes 4K,1M,16M,256M --iters 20 --json $L/anchors.json > $L/anchors.log 2>&1; echo "anchors rc=$? $(( $(date +%s)-s ))s"
grep -E "ceil_" $L/anchors.log | head -6
p() { local tag=$1 lim=$2; shift 2; local s=$(date +%s)
  timeout $lim $G/perf "$@" --json $L/perf_$tag.json > $L/perf_$tag.log 2>&1; echo "perf $tag rc=$? $(( $(date +%s)-s ))s"; }
N="--dtype f32 -n 20 -w 5"
COLLECTIVES_LOG=info p bc_cv 60 --op broadcast --devices cuda:0,vulkan:0 -b 4K -e 1G -f 4 $N
COLLECTIVES_LOG=info p bc_vc 60 --op broadcast --devices vulkan:0,cuda:0 -b 4K -e 1G -f 4 $N
p ar_cv 60 --op all_reduce --devices cuda:0,vulkan:0 -b 4K -e 256M -f 4 $N
p ar_cvh 60 --op all_reduce --devices cuda:0,vulkan:0,cpu:0 -b 4K -e 256M -f 4 $N
for f in $L/perf_*.log; do echo "== $f"; grep "collectives:" $f | sort | uniq -c | head -5; grep -vE "^#|collectives:" $f | awk '{print $2, $7, $8}' | tr '\n' ';'; echo; done
