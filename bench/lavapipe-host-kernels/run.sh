#!/usr/bin/env bash
# Small Vulkan kernels run by the host (`collectives/src/backend/vulkan/on_host.rs`) against the
# device's shaders, on lavapipe, in one release perf binary: `COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=0`
# sends every kernel to the device (the code path of the build before), unset is the new default.
# Three rounds, the two interleaved and the order alternating. Run from the repository root after
# `cargo build --release -p collectives-examples --example perf`; the development machine, idle.
# Invoked as: bash bench/lavapipe-host-kernels/run.sh > bench/lavapipe-host-kernels/rounds.txt 2>&1
set -u
perf=target/release/examples/perf
rows() {
  $perf --op local_reduce --devices vulkan:0,cpu:1 --sizes 4K,16K,64K -n 200 -w 20
  $perf --op local_reduce --devices vulkan:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7 --sizes 4K,16K -n 200 -w 20
  $perf --op all_reduce,reduce,reduce_scatter --devices vulkan:0,cpu:0 --sizes 4K,64K -n 200 -w 20
  $perf --op all_reduce,reduce_scatter --devices vulkan:0,cpu:0,cpu:1,cpu:2 --sizes 4K,64K -n 200 -w 20
  $perf --op all_reduce,reduce_scatter --devices cpu:0,vulkan:0 --sizes 4K,64K -n 200 -w 20
}
run() {
  echo "== $1 round $2"
  if [ "$1" = device ]; then COLLECTIVES_VULKAN_HOST_KERNEL_BYTES=0 rows; else rows; fi | grep -E '^ +[a-z_]+ +[0-9]+ '
}
for r in 1 2 3; do
  if [ $((r % 2)) = 1 ]; then run device $r; run host $r; else run host $r; run device $r; fi
done
