#!/bin/bash
# GPU run 10d (one H200): the lib tests at the one-rank NCCL refusal widened to 8-byte dtypes.
# Invoked as the `run` command itself (with .gpu/lib, .gpu/env.sh):
source .gpu/env.sh; export REQUIRE_CUDA=1 REQUIRE_VULKAN=1; for k in 1 2; do timeout 120 .gpu/lib --test-threads 2 > $L/t_lib_$k.log 2>&1; echo "lib $k rc=$? $(grep -E '^test result' $L/t_lib_$k.log)"; grep -h -E "panicked|wrong" $L/t_lib_$k.log | head -5; done; timeout 60 .gpu/lib nccl_clique --nocapture > $L/t_clique.log 2>&1; echo "clique rc=$?"; tail -5 $L/t_clique.log
