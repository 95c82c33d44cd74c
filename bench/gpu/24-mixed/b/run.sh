#!/bin/bash
# GPU run 24b (one H200): the probes of run 24a's build plus a binary add launched raw
# over the same 4 KiB (40 bytes of kernel parameters where the reduce has about 300) and a probe
# of empty kernels by parameter size (launch_parameters_probe), three runs.
# Invoked as: timeout -k 5 200 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in 1 2 3; do
  timeout 60 $G/probe --ignored --test-threads 1 --nocapture backend::cuda::probe:: > $L/probe_$r.log 2>&1; echo "probe $r rc=$?"
  grep -o "probe:.*" $L/probe_$r.log
done
date
