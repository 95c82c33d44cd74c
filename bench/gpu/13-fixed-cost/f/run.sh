#!/bin/bash
# GPU run 13f (one H200): the final main's lib tests (pooled CUDA events, host calls, the bridge
# in the group listing), the bridge tests printing the listing of cuda:0 + vulkan:0.
# Invoked as: timeout -k 5 570 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
timeout 60 $G/lib validate_decides a_group_lists --nocapture > $L/t_bridge.log 2>&1; echo "bridge rc=$?"; cat $L/t_bridge.log | grep -vE "^\s*$" | tail -20
timeout 150 $G/lib --test-threads 2 > $L/t_lib.log 2>&1; echo "lib rc=$?"; grep -E "^test result|FAILED|panicked" $L/t_lib.log
