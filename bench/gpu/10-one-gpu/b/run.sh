#!/bin/bash
# GPU run 10b (one H200): the fixes of run 10a checked (NCCL one-rank Avg, Vulkan division on the
# NVIDIA driver, comm_nccl's one-GPU skip, virtual-device tests with the list syntax); perf of the
# native all_reduce on 2 and 4 virtual CUDA devices of one GPU; before (df0f592) / after on 4 CPU
# devices and CUDA+Vulkan, interleaved; the CPU criterion bench before / after; anchors.py.
# Invoked as: timeout -k 5 570 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-20s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t lib lib 120 --test-threads 2
t comm_nccl comm_nccl 60
t device_groups device_groups 90 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0,0 t device_groups_v4 device_groups 90 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t cuda_native_v8 cuda_native 90
COLLECTIVES_CUDA_DEVICES=0,0 t typed_v2 typed 60
t vulkan_ops vulkan_ops 150 --test-threads 4
grep -h -E "panicked|wrong|^skipped" $L/t_*.log | sort | uniq -c | head -30
s=$(date +%s); timeout 60 python3 $G/anchors.py --sizes 4K,1M,16M,64M,256M --iters 20 --json $L/anchors.json > $L/anchors.log 2>&1; echo "anchors rc=$? $(( $(date +%s)-s ))s"
p() { local tag=$1 bin=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$bin "$@" --json $L/perf_$tag.json > $L/perf_$tag.log 2>&1; echo "perf $tag rc=$? $(( $(date +%s)-s ))s"; }
N="--dtype f32 --iters 20 --warmup 5"
for k in 1 2; do
  COLLECTIVES_CUDA_DEVICES=0,0 p v2_$k perf 60 --op all_reduce --algo oneshot,star,ring --devices cuda:0,cuda:1 $N --sizes 4K..256M:4
  COLLECTIVES_CUDA_DEVICES=0,0,0,0 p v4_$k perf 60 --op all_reduce --algo oneshot,star,ring --devices cuda:0,cuda:1,cuda:2,cuda:3 $N --sizes 4K..256M:4
  for v in old new; do b=perf; [ $v = old ] && b=perf_old
    p cpu_${v}_$k $b 60 --op all_reduce --algo star,ring --devices cpu:0,cpu:1,cpu:2,cpu:3 $N --sizes 4K..64M:4
    p xv_${v}_$k $b 60 --op all_reduce --algo star,ring --devices cuda:0,vulkan:0 $N --sizes 4K..256M:8
  done
done
for v in old new; do b=bench_cpu; [ $v = old ] && b=bench_cpu_old
  s=$(date +%s); timeout 100 $G/$b --bench --warm-up-time 0.5 --measurement-time 1 'k4|copy_to_device' > $L/bench_$v.log 2>&1; echo "bench $v rc=$? $(( $(date +%s)-s ))s"
done
for f in $L/perf_*.log; do echo "== $f"; grep -v -E '^#\s*$' $f | grep -v "^# \.gpu" | head -40; done
grep -E "^reduce_sum|^copy|time:|thrpt:" $L/bench_*.log | head -60
cat $L/anchors.log
