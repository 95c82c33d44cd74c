#!/bin/bash
# Run 67: the direct path's lone copy (a453e20: one target copying a tensor realized on its device
# is one backend copy, without the schedule) on a GPU: every GPU-facing test binary of this tree,
# the copies and ops on CUDA, Vulkan and host devices, issued calls on four virtual devices (trimmed
# to the binaries that copy, the session's device time being short: plans, typed, collective_moves
# and device_groups are staged but not run).
# Staged by: bash bench/gpu/stage.sh bench/gpu/67-lone-copy - lib cuda_copies cuda_ops cuda_faults issued plans joins typed collective_moves vulkan_collectives first_hour device_groups
# Invoked as: timeout -k 5 280 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version,pci.bus_id --format=csv,noheader
export REQUIRE_CUDA=1
t lib lib 150
t copies cuda_copies 60
t ops cuda_ops 60
t faults cuda_faults 60
COLLECTIVES_CUDA_DEVICES=0,0,0,0 t issued4 issued 90
t joins joins 60
t vcoll vulkan_collectives 60
t first first_hour 60
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
