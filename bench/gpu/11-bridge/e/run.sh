#!/bin/bash
# GPU run 11e (one H200): the fault sweep again, pool sizes no longer compared (run 11d flagged a
# host pool holding one more freed buffer after a failed CPU ring on 16 cores, and CUDA buffers
# parked in the reuse pool, as leaks). CUDA groups on virtual cuda:0,cuda:1 of the one GPU.
# Invoked as: timeout -k 5 400 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
s=$(date +%s); COLLECTIVES_CUDA_DEVICES=0,0 timeout 300 $G/faults --nocapture > $L/t_faults.log 2>&1
echo "faults rc=$? $(( $(date +%s)-s ))s $(grep -E '^test result' $L/t_faults.log)"
grep -E "failpoints|^total|LEAK|panicked|left|skipped|left out" $L/t_faults.log | grep -v "^ *cpu x4\|vulkan+cpu x2\|cpu x2+vulkan" | head -60
