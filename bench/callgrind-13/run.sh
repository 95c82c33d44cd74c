#!/bin/bash
# Instructions per collective call (callgrind) of the perf example on cpu:0..3: df0f592, before the
# structure issue (perf_old), against 84cf637 (perf_new). Each figure is the count at --iters 60
# minus the count at --iters 20, over 40: same warmup, no check, so only the timed calls remain.
# Build each: `cargo build --release -p collectives-examples --example perf` at that commit, and
# copy target/release/examples/perf here as perf_old / perf_new. Run: `bash run.sh > result.txt`.
D=cpu:0,cpu:1,cpu:2,cpu:3
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 | sed -n 's/.*Collected : //p'; }
printf "%-16s %-5s %-6s %14s %14s %8s\n" op algo size old new new/old
for op in all_reduce reduce broadcast all_gather reduce_scatter all_to_all; do
  algos=auto; [ $op = all_reduce ] && algos="auto ring"
  for algo in $algos; do
    for size in 4K 64K 1M; do
      r=()
      for b in ./perf_old ./perf_new; do
        a=$(count $b --op $op --algo $algo --devices $D --sizes $size --iters 20 --warmup 5 --no-check)
        z=$(count $b --op $op --algo $algo --devices $D --sizes $size --iters 60 --warmup 5 --no-check)
        r+=($(( (z - a) / 40 )))
      done
      printf "%-16s %-5s %-6s %14d %14d %8.3f\n" $op $algo $size ${r[0]} ${r[1]} $(echo "${r[1]} / ${r[0]}" | bc -l)
    done
  done
done
