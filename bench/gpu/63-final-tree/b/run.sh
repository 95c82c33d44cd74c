#!/bin/bash
# Run 63b: what setting a graph's kernel-node parameters per launch costs on this lease
# (`graph_launch_probe`, its rows with and without `cuGraphExecKernelNodeSetParams`), twice, beside
# the layers probe; 0e4af99, run a's staged binaries.
# Staged by: bash bench/gpu/stage.sh bench/gpu/63-final-tree/a - lib cuda_native cuda_ops cuda_copies cuda_faults device_groups issued joins plans typed collective_moves collective_props vulkan_collectives first_hour, then this run.sh copied over .gpu/run.sh
# Invoked as: timeout -k 5 100 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1
for r in 1 2; do
  for pr in graph::graph_launch_probe local_reduce_layers_probe; do
    timeout 40 $G/lib --ignored --nocapture --exact backend::cuda::probe::$pr 2>&1 | grep -E "^probe|panicked"
  done
done
timeout 30 python3 $G/anchors.py --sizes 4K --iters 10 2>&1 | tail -1
