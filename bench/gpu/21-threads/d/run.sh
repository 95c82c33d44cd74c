#!/bin/bash
# GPU run 21d (one H200): the vulkan_ops test runs b and c cut off (reduce_every_kind_with_and_without_scale,
# a debug build with the slow sizes; ccb47a9's test binary), alone, given 190 s.
# Invoked as: timeout -k 5 200 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_VULKAN=1
s=$(date +%s); timeout 190 $G/vulkan_ops reduce_every_kind_with_and_without_scale > $L/t_vulkan_ops_reduce.log 2>&1
echo "vulkan_ops reduce rc=$? $(( $(date +%s) - s ))s $(grep -E '^test result' $L/t_vulkan_ops_reduce.log)"
date
