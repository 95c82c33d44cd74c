#!/bin/bash
# Not run yet (run 32d got no machine): on one H200, the star all_to_all against the one-shot on
# two virtual devices, where Auto keeps the one-shot by the rule for the other collectives on two
# devices, not by a measurement of all_to_all; issue 14's 4 KiB rows; anchors.py in the same
# command; and the tests over 84d8306's launch::issue_over (every CUDA kernel's entry point, moved
# after run c and not yet run on a GPU): lib, cuda_ops, cuda_copies, joins, cuda_native on 2 and
# 8, the fault sweep. Added after 84d8306 (also not yet run on a GPU host): the host group's
# calls on the H200 host's 16 cores (2967d25's broadcast as one call, df9b408's all_to_all and
# its 16 MiB threshold for members side by side, set on 2 cores), and the 8-device 4 KiB star
# all_reduce after fc30794 trimmed a call's allocations (run a profiled it at 21.1 us), and
# gather and scatter on four virtual devices (the perf tool measures them since 1c0960d; on CUDA
# groups they are still graphs of hops and a concat: never measured).
# Added on 2026-12-05 (not yet run on a GPU host either): ca6e943 (a gather or reduce of a CUDA
# group, the leader's one kernel over peers' shards, takes the direct path) and 03b5916 (a
# scatter of CUDA devices is one call of the root; the star reduce_scatter's copy-out shares its
# code): gather, scatter and reduce on four virtual devices against perf_base (4e2923c, the
# same perf source), interleaved; device_groups' CUDA groups of 2, 3 and 4 (scatter from every
# root, scatter_sizes, gather, reduce under every algorithm).
# Stage as the other runs of this folder (stripped test binaries and a release perf in
# .gpu/, env.sh, steps.sh and anchors.py beside; perf_base: the release perf of 4e2923c;
# perf_prof: the release perf built with --features profile, not stripped), then:
# Invoked as: timeout -k 5 590 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
COLLECTIVES_CUDA_DEVICES=0,0 p a2a_2 perf --op all_to_all --devices cuda:0,cuda:1 --sizes 4K,1M,4M,16M,256M --algo auto,star,oneshot --iters 20 --warmup 3
COLLECTIVES_CUDA_DEVICES=0,0 p a2a_2r perf --op all_to_all --devices cuda:0,cuda:1 --sizes 4K,1M --algo star,oneshot,star,oneshot --iters 200 --warmup 20
p lr perf --op local_reduce --devices cuda:0,cpu:0 --sizes 4K --iters 2000 --warmup 100
COLLECTIVES_CUDA_DEVICES=0,0 p cc perf --op all_reduce --devices cuda:0,cuda:1 --sizes 4K --iters 2000 --warmup 100
p c8 perf --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 --sizes 4K --iters 2000 --warmup 100
# Why the 4 KiB cpu:0..7 all_reduce reads 7-8 us here and 2.4 on the 2-core development machine:
# a host profile (perf_prof: the tree built with --features profile, symbols kept).
p c8prof perf_prof --op all_reduce --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 --sizes 4K --iters 200000 --warmup 1000 --profile $L/prof_c8
p h8 perf --op broadcast,all_to_all --devices cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 --sizes 4K,1M,4M,16M,64M --iters 30 --warmup 3
for r in 1 2; do for b in perf_base perf; do
COLLECTIVES_CUDA_DEVICES=0,0,0,0 p gs4_${b}_$r $b --op gather,scatter,reduce --devices cuda:0,cuda:1,cuda:2,cuda:3 --sizes 4K,1M,16M --iters 50 --warmup 5
done; done
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 p cc8 perf --op all_reduce --devices cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7 --sizes 4K --iters 2000 --warmup 100
timeout 40 python3 $G/anchors.py --sizes 1M --iters 10 > $L/anchors.log 2>&1; tail -1 $L/anchors.log
COLLECTIVES_CUDA_DEVICES=0,0,0 t plans3 plans 30
COLLECTIVES_CUDA_DEVICES=0,0 t native_2 cuda_native 60 --test-threads 2 --show-output
grep -h "devices, AllToAll" $L/t_native_2.log | sort -u | tr '\n' ' '; echo
COLLECTIVES_CUDA_DEVICES=0,0,0,0,0,0,0,0 t native_8 cuda_native 90 --test-threads 2
t lib lib 100 --test-threads 4
t ops cuda_ops 40 --test-threads 2
t copies cuda_copies 30
t joins joins 30 --test-threads 2
COLLECTIVES_CUDA_DEVICES=0,0,0,0 t groups4 device_groups 150 --test-threads 2 cuda_groups_of_every_size
COLLECTIVES_CUDA_DEVICES=0,0 t faults2 faults 70 --show-output
grep -h "^total:" $L/t_faults2.log
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
