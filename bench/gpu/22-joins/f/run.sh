#!/bin/bash
# GPU run 22f (one H200): the joins test with a host join read back by a CUDA copy in the same
# realize (the upload waiting on the device for the join's downloads: one fence per CUDA device,
# a `Joined` fence with two virtual CUDA devices), on one and on two virtual CUDA devices.
# Invoked as: timeout -k 5 50 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
timeout 20 $G/joins > $L/t_joins.log 2>&1; echo "joins rc=$? $(grep -E '^test result' $L/t_joins.log)"
COLLECTIVES_CUDA_DEVICES=0,0 timeout 20 $G/joins > $L/t_joins2.log 2>&1; echo "joins2 rc=$? $(grep -E '^test result' $L/t_joins2.log)"
grep -h -E "panicked|FAILED" $L/t_*.log | head
