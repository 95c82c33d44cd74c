#!/bin/bash
# GPU run 15g (one H200): cuda_ops with the many-part concat test (20 inputs: two copyseg
# launches, every copy width, every dtype), on the physical device and on two virtual ones.
# Invoked as: timeout -k 5 120 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs
G=.gpu
source $G/env.sh
export REQUIRE_CUDA=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 90 $G/cuda_ops > $L/t_cuda_ops.log 2>&1; echo "cuda_ops rc=$?"; grep -E "^test |test result" $L/t_cuda_ops.log
COLLECTIVES_CUDA_DEVICES=0,0 timeout 90 $G/cuda_ops concat > $L/t_cuda_ops_v2.log 2>&1; echo "cuda_ops v2 rc=$?"; grep -E "^test |test result" $L/t_cuda_ops_v2.log
