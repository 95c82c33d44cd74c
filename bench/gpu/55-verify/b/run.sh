#!/bin/bash
# Run 55b, on run a's lease right after it: the library's probe of where a 4 KiB `local_reduce`'s
# time goes (`backend::cuda::probe::local_reduce_layers_probe`: the driver's floors, the raw
# reduce launch and its waits, the backend's call, the whole call), twice.
# Staged by: run a's staging (1eb798e's `lib`)
# Invoked as (the whole command given to `run`): G=.gpu; test -x $G/lib || tar xJf $G/bins.tar.xz -C $G; source $G/env.sh; mkdir -p $OUT; for r in 1 2; do timeout 60 $G/lib --ignored --nocapture --exact backend::cuda::probe::local_reduce_layers_probe 2>&1 | grep -E "probe|row|us" | head -30; done | tee $OUT/layers.txt
