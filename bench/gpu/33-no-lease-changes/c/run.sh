#!/bin/bash
# Run c (2026-12-05, the same lease): plans after its fix for a machine listing two logical CUDA
# devices of one GPU (run b's plans2 failed in choose_is_the_documented_expression: with cuda:2
# absent the test took the across-GPU branch and asked the two-shot of two devices of one GPU),
# on two and three virtual devices and on the physical mapping.
# Staged: the plans test binary (dev, --features slow,failpoints), stripped; env.sh, steps.sh.
# Invoked as: timeout -k 5 120 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
export REQUIRE_CUDA=1
COLLECTIVES_CUDA_DEVICES=0,0 t plans2 plans 30
COLLECTIVES_CUDA_DEVICES=0,0,0 t plans3 plans 30
t plans1 plans 30
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
