#!/bin/bash
# Instructions per call (callgrind) of the perf example's smallest CPU calls: 5bfde7f (perf_old)
# against the tree with the realize path's trims (perf_new: no clock read unless timings are
# logged, the targets and a lone kernel's inputs kept inline, one target cached without a
# Vec, the kernel contract's input list inline, the backend table hashed by foldhash). Each figure
# is the count at --iters 600 minus the count at --iters 200, over 400 (as bench/callgrind-13).
# Build each: `cargo build --release -p collectives-examples --example perf` at that tree, and
# copy target/release/examples/perf here as perf_old / perf_new. Run: `bash run.sh > result.txt`.
count() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 | sed -n 's/.*Collected : //p'; }
printf "%-14s %-48s %-5s %10s %10s %8s\n" op devices size old new new/old
for spec in "local_reduce cpu:0 4" "local_reduce cpu:0 4K" "all_reduce cpu:0,cpu:1 4" \
  "all_reduce cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 4K"; do
  set -- $spec
  r=()
  for b in ./perf_old ./perf_new; do
    a=$(count $b --op $1 --devices $2 --sizes $3 --iters 200 --warmup 5 --no-check)
    z=$(count $b --op $1 --devices $2 --sizes $3 --iters 600 --warmup 5 --no-check)
    r+=($(( (z - a) / 400 )))
  done
  printf "%-14s %-48s %-5s %10d %10d %8.3f\n" $1 $2 $3 ${r[0]} ${r[1]} $(echo "${r[1]} / ${r[0]}" | bc -l)
done
