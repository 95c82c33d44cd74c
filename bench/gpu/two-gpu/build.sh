#!/bin/bash
# Builds what run.sh needs into .gpu/ at the repository root (run from there):
#   bash bench/gpu/two-gpu/build.sh
# then, on a two-GPU machine (kind nvidia-h200-x2), with carry [".gpu", ".gl"]:
#   timeout -k 5 560 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
# (bench/gpu/stage.sh also fetches Debian's libvulkan1 into .gl/ where it is missing.)
exec bash bench/gpu/stage.sh bench/gpu/two-gpu - lib device_groups typed cuda_copies
