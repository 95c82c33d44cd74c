#!/usr/bin/env bash
# The host kernels' thread-pool threshold: from 64 Ki elements of output (`perf_old`, the
# release perf tool of the commit before) to 2 MiB moved, read and written (`perf_new`), on the
# 2-core development machine, idle. Three rounds, the two interleaved, the order alternating.
# Invoked as: PERF_OLD=/tmp/perf_cur PERF_NEW=/tmp/perf_new bash bench/cpu-par-threshold/run.sh > bench/cpu-par-threshold/rounds.txt 2>&1
set -u
eight=cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7
rows() {
  $1 --op local_reduce,all_reduce --devices cpu:0,cpu:1 --sizes 128K..8M -n 100 -w 10
  $1 --op local_reduce,all_reduce,reduce_scatter,all_gather --devices $eight --sizes 64K..4M -n 100 -w 10
}
for r in 1 2 3; do
  order="old new"; [ $((r % 2)) = 0 ] && order="new old"
  for b in $order; do
    echo "== $b round $r"
    bin=$([ $b = old ] && echo "$PERF_OLD" || echo "$PERF_NEW")
    rows "$bin" | grep -E '^ +[a-z_]+ +[0-9]+ '
  done
done
