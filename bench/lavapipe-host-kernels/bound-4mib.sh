#!/usr/bin/env bash
# The host kernels' bound raised from 512 KiB to 4 MiB moved (`VULKAN_HOST_KERNEL_BYTES`), on
# lavapipe: one release perf binary, `COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=524288` (the old
# bound) against the default, three rounds, the order alternating. Run from the repository root
# after `cargo build --release -p collectives-examples --example perf`; the development machine, idle.
# Invoked as: bash bench/lavapipe-host-kernels/bound-4mib.sh > bench/lavapipe-host-kernels/bound-4mib.txt 2>&1
set -u
perf=target/release/examples/perf
rows() {
  $perf --op all_reduce,reduce_scatter,local_reduce --devices vulkan:0,cpu:0,cpu:1,cpu:2 --sizes 128K,256K,512K -n 100 -w 10
  $perf --op local_reduce --devices vulkan:0,cpu:1 --sizes 256K,512K -n 100 -w 10
}
run() {
  echo "== $1 round $2"
  if [ "$1" = old ]; then COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=524288 rows; else rows; fi | grep -E '^ +[a-z_]+ +[0-9]+ '
}
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then run old $r; run new $r; else run new $r; run old $r; fi
done
