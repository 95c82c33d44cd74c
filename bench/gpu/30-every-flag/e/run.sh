#!/bin/bash
# GPU run 30e (one H200): the tree as submitted (a9a76d7: d, and the elementwise launches share
# their lookups, the copy kernels' launches in launch/copy.rs) — the flag's tests, the launch
# module's (its copy tests among them), lib, cuda_ops, cuda_copies, joins, cuda_native on two
# virtual devices, cuda_faults. Tests only, so no anchors.
# Invoked as: timeout -k 5 300 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t() { local tag=$1 name=$2 lim=$3; shift 3; local s=$(date +%s)
  timeout $lim $G/$name "$@" > $L/t_$tag.log 2>&1; local rc=$?
  printf "%-24s rc=%-3s %4ss  %s\n" $tag $rc $(( $(date +%s) - s )) "$(grep -E '^test result' $L/t_$tag.log | tail -1)"; }
t flag lib 60 --nocapture backend::cuda::flag
t launch lib 100 --test-threads 4 backend::cuda::launch
t lib lib 100 --test-threads 4
t ops cuda_ops 60 --test-threads 2
t copies cuda_copies 40
t joins joins 40 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0 t native_2 cuda_native 60 --test-threads 2
t cuda_faults cuda_faults 30 --test-threads 2
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
