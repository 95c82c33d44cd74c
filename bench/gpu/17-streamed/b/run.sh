#!/bin/bash
# GPU run 17b (one H200): run 17a's code with two fixes (the stream pass reads a step's input
# device, not its node's: a fused Vulkan chain is not an upload; the cast test's reference rounds
# as the library does) and staging fills with non-temporal stores (copy_bytes_to_staging).
# Before/after the streamed kernel in the same binary (COLLECTIVES_STREAM=0 is before), two
# interleaved rounds; the chunk size; the pageable upload and pinned download; a debug timeline;
# anchors.py; then the tests. Staging fills in pieces of 128 KiB (512 KiB in run 17a).
# Invoked as: timeout -k 5 570 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
p() { # tag args...: one perf invocation, its rows in the summary
  local tag=$1; shift
  timeout 90 $G/perf "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error' $L/$tag.log
}
p up --op broadcast --devices cpu:0,cuda:0 --sizes 16M,256M --iters 10 --warmup 2
p down --op broadcast --devices cuda:0,cpu:0 --sizes 16M,256M --iters 10 --warmup 2
for r in 1 2; do
  for s in 0 1; do
    export COLLECTIVES_STREAM=$s
    p cvh_s${s}_$r --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 4M,16M,64M,256M --iters 10 --warmup 2
    p ch_s${s}_$r --op all_reduce,reduce --devices cuda:0,cpu:0 --sizes 4M,16M,256M --iters 10 --warmup 2
  done
done
unset COLLECTIVES_STREAM
for c in 1 4 8; do
  COLLECTIVES_STREAM_CHUNK_BYTES=$((c << 20)) p chunk_${c}M --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 16M,256M --iters 10 --warmup 2
done
for s in 0 1; do
  COLLECTIVES_STREAM=$s COLLECTIVES_LOG=debug timeout 60 $G/perf --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 256M --iters 2 --warmup 1 > $L/timeline_s$s.log 2>&1; echo "timeline_s$s rc=$?"
done
date; timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; grep ceil $L/anchors.log
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t groups device_groups 150 --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 80 --test-threads 2 large_ cuda_vulkan_and_host
t lib lib 100 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 150
t cuda_copies cuda_copies 60
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
grep -h "streamed" $L/t_faults2.log | head
date
