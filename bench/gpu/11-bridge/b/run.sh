#!/bin/bash
# GPU run 11b: where a device-ring hop's time goes (timing probe), and the lib tests again.
# Invoked as: timeout -k 5 300 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
timeout 60 $G/lib device_ring_timing --ignored --nocapture 2>&1 | grep -E "round|panicked|result"
timeout 150 $G/lib --test-threads 2 > $L/t_lib.log 2>&1; echo "lib rc=$? $(grep -E '^test result' $L/t_lib.log)"
grep -E "panicked|FAILED" $L/t_lib.log | head
