#!/bin/bash
# GPU run 27a (one H200): the host ring's ceiling with the CUDA hop by copy engine against by
# copy kernel (`two_apis_copying_at_once_probe`); the staged tests on two logical CUDA devices
# (the peer tests, df718eb/48b8a21 not GPU-run before); lib; device_groups; forced host staging
# of broadcast cuda:0 <-> vulkan:0 at 1 GiB (the ring today); anchors.py in the same command.
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t ceiling lib 90 --ignored --nocapture --exact backend::staged::one_gpu::two_apis_copying_at_once_probe
grep -h "^round" $L/t_ceiling.log
p() { local tag=$1 b=$2; shift 2; timeout 60 $G/$b "$@" --json $L/$tag.json > $L/$tag.log 2>&1; echo "$tag rc=$?"; grep -E '^ +[a-z_]+ +[0-9]' $L/$tag.log; grep -E '^error|warning|panicked' $L/$tag.log; }
COLLECTIVES_BRIDGE=host p host_cv perf --op broadcast --devices cuda:0,vulkan:0 --sizes 64M,1G --iters 5 --warmup 2
COLLECTIVES_BRIDGE=host p host_vc perf --op broadcast --devices vulkan:0,cuda:0 --sizes 64M,1G --iters 5 --warmup 2
COLLECTIVES_CUDA_DEVICES=0,0 t peer lib 100 --test-threads 2 --nocapture backend::staged
grep -h -E "^peer bridge:|^skipped" $L/t_peer.log | sort | uniq -c
t lib lib 150 --test-threads 4
t groups device_groups 120 --test-threads 2
grep -h -E "panicked|FAILED|warning" $L/t_*.log | head -20
timeout 40 python3 $G/anchors.py --sizes 64M,1G --iters 10 > $L/anchors.log 2>&1; tail -8 $L/anchors.log
date
