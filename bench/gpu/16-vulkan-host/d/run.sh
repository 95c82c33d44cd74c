#!/bin/bash
# GPU run 16d (one H200), main at 4c38b13: where small Vulkan tensors should stop living in host
# memory (the bound at 0 against its default, 1 MiB, at 64 KiB to 512 KiB, two rounds); the 4 KiB
# mixed calls, two rounds; host-staged CUDA <-> Vulkan moves (COLLECTIVES_BRIDGE=host) of
# 1 GiB by ring geometry; the 3-kind all_reduce at 256 MiB; anchors.py last, in the same command.
# perf_h (hub_* rows): 4c38b13 plus the star's fold on the first CUDA device of a mixed group
# whose leader is a Vulkan device; perf_s (spin_* rows): perf_h plus host waits on the Vulkan
# timeline polling it for up to 100 us before sleeping in vkWaitSemaphores, and a pageable
# upload's completion event taken from its last chunk's (one event record fewer).
# Invoked as: timeout -k 5 330 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; uptime; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
p() { # tag args...: one perf invocation, its rows in the summary (hub_*: perf_h, spin_*: perf_s)
  local tag=$1 bin=perf; shift; [ "${tag#hub_}" != "$tag" ] && bin=perf_h; [ "${tag#spin_}" != "$tag" ] && bin=perf_s
  timeout 60 $G/$bin "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log
}
S=64K,128K,256K,512K
for r in 1 2; do
  for h in 0 default; do
    if [ $h = 0 ]; then export COLLECTIVES_VULKAN_HOST_BYTES=0; else unset COLLECTIVES_VULKAN_HOST_BYTES; fi
    p bound_cv_${h}_$r --op all_reduce,broadcast --devices cuda:0,vulkan:0 --sizes $S --iters 50 --warmup 5
    p bound_cvh_${h}_$r --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes $S --iters 50 --warmup 5
    p bound_vh_${h}_$r --op all_reduce --devices vulkan:0,cpu:0 --sizes $S --iters 50 --warmup 5
  done
done
unset COLLECTIVES_VULKAN_HOST_BYTES
for r in 1 2; do
  p small_cv_$r --op all_reduce,broadcast --devices cuda:0,vulkan:0 --sizes 4K --iters 300 --warmup 20
  p small_cvh_$r --op all_reduce --devices cuda:0,vulkan:0,cpu:0 --sizes 4K --iters 300 --warmup 20
  p small_ch_$r --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 300 --warmup 20
  p small_vc_$r --op all_reduce,reduce_scatter --devices vulkan:0,cuda:0 --sizes 4K,64K --iters 300 --warmup 20
  p hub_vc_$r --op all_reduce,reduce_scatter --devices vulkan:0,cuda:0 --sizes 4K,64K --iters 300 --warmup 20
  p hub_vch_$r --op all_reduce --devices vulkan:0,cpu:0,cuda:0 --sizes 4K,64K --iters 300 --warmup 20
  p hub_vh_$r --op all_reduce,local_reduce --devices vulkan:0,cpu:0 --sizes 4K,64K --iters 300 --warmup 20
  p spin_vh_$r --op all_reduce,local_reduce --devices vulkan:0,cpu:0 --sizes 4K,64K --iters 300 --warmup 20
  p spin_ch_$r --op all_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 300 --warmup 20
  p spin_cv_$r --op all_reduce,broadcast --devices cuda:0,vulkan:0 --sizes 4K --iters 300 --warmup 20
done
for geo in 16:8 32:8 64:4 128:4 256:2; do
  c=${geo%:*}; s=${geo#*:}
  export COLLECTIVES_BRIDGE=host COLLECTIVES_STAGED_CHUNK_BYTES=$((c << 20)) COLLECTIVES_STAGED_SLOTS=$s
  p host_${c}x${s}_cv --op broadcast --devices cuda:0,vulkan:0 --sizes 256M,1G --iters 5 --warmup 2
  p host_${c}x${s}_vc --op broadcast --devices vulkan:0,cuda:0 --sizes 256M,1G --iters 5 --warmup 2
done
unset COLLECTIVES_BRIDGE COLLECTIVES_STAGED_CHUNK_BYTES COLLECTIVES_STAGED_SLOTS
p big_cvh --op all_reduce,broadcast --devices cuda:0,vulkan:0,cpu:0 --sizes 16M,256M --iters 10 --warmup 2
date; timeout 100 python3 $G/anchors.py > $L/anchors.log 2>&1; echo "anchors rc=$?"; tail -25 $L/anchors.log
# Tests of perf_s's code, Vulkan and CUDA required.
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t groups device_groups 100 --test-threads 2
COLLECTIVES_BRIDGE=host t groups_host device_groups 100 --test-threads 2 cuda_
t vulkan_coll vulkan_collectives 60
t lib lib 100 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 120
t cuda_copies cuda_copies 90
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
