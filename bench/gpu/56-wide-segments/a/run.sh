#!/bin/bash
# Run 56a: the segment copy kernel's wide form (up to 128 segments a launch; a segment found by
# bisecting the ends) and the reduce kernels' pointer arrays read where the driver put them
# (`__grid_constant__`), against e615384 (`perf_old`), with `a/trial.diff`
# (COLLECTIVES_TRIAL_A2A8=1: the all_to_all of five to eight members with one CUDA device fanned
# out, `perf` with it set); three rounds: the all_to_all of 4, 5 and 8 members at 4, 16 and 64 KiB,
# of eight virtual CUDA devices (and their all_gather) at 4 KiB, 64 KiB and 1 MiB; local_reduce
# and the reduces of eight virtual devices; issue 14's 4 KiB rows; anchors; then the tests the
# change touches, `collective_props` and `collective_moves` with the trial on as well.
# Staged by: git apply bench/gpu/56-wide-segments/a/grid_const.diff bench/gpu/56-wide-segments/a/trial.diff; bash bench/gpu/stage.sh bench/gpu/56-wide-segments/a e615384 lib cuda_native collective_props collective_moves plans joins device_groups typed issued cuda_copies; git apply -R bench/gpu/56-wide-segments/a/grid_const.diff bench/gpu/56-wide-segments/a/trial.diff
#   (onto the commit that adds this folder, whose tree differs from the staged one, both diffs
#   reversed, only in doc comments of collective/algo.rs, CHANGELOG.md, bench/RESULTS.md and this
#   folder)
# Invoked as: timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
test -x $G/lib || tar xJf $G/bins.tar.xz -C $G
source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
V8=0,0,0,0,0,0,0,0 D8=cuda:0,cuda:1,cuda:2,cuda:3,cuda:4,cuda:5,cuda:6,cuda:7
A="--op all_to_all --sizes 4K,16K,64K --iters 500 --warmup 50"
I="--iters 1000 --warmup 100"
for r in 1 2 3; do
  for g in c4:cuda:0,cpu:0,cpu:1,cpu:2 c5:cuda:0,cpu:0,cpu:1,cpu:2,cpu:3 c8:cuda:0,cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6 h8:cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cuda:0; do
    tag=${g%%:*}; dev=${g#*:}
    p a_${tag}_old_$r perf_old --devices $dev $A
    p a_${tag}_new_$r perf --devices $dev $A
    [ $tag != c4 ] && COLLECTIVES_TRIAL_A2A8=1 p a_${tag}_x_$r perf --devices $dev $A
  done
  for b in perf_old perf; do
    COLLECTIVES_CUDA_DEVICES=$V8 p v8_${b}_$r $b --op all_to_all,all_gather --devices $D8 --sizes 4K,64K,1M --iters 300 --warmup 30
    p lr_${b}_$r $b --op local_reduce --devices cuda:0 --sizes 4K $I
    p lrl_${b}_$r $b --op local_reduce --devices cuda:0 --sizes 16M --iters 50 --warmup 5
    COLLECTIVES_CUDA_DEVICES=$V8 p s8_${b}_$r $b --op all_reduce --devices $D8 --sizes 4K --iters 500 --warmup 50
    COLLECTIVES_CUDA_DEVICES=$V8 p o8_${b}_$r $b --op all_reduce --algo oneshot --devices $D8 --sizes 1M,4M --iters 50 --warmup 5
    p ch_${b}_$r $b --op all_reduce --devices cuda:0,cpu:0 --sizes 4K $I
    COLLECTIVES_CUDA_DEVICES=0,0 p v2_${b}_$r $b --op all_reduce --devices cuda:0,cuda:1 --sizes 4K $I
  done
done
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
t lib1 lib 150
COLLECTIVES_CUDA_DEVICES=$V8 t native8 cuda_native 90 --test-threads 2
t copies cuda_copies 40
t props collective_props 120
COLLECTIVES_TRIAL_A2A8=1 t props_x collective_props 120
COLLECTIVES_TRIAL_A2A8=1 t moves_x collective_moves 30
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
