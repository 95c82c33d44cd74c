#!/bin/bash
# Run 57b: on run 57a's lease and binaries, right after it: the layers probe (the raw launch of the
# reduce and its wait, the library's local_reduce) beside the graph probe, twice in turn.
# Staged by: run 57a's staging (the same .gpu/)
# Invoked as: G=.gpu; test -x $G/lib || tar xJf $G/bins.tar.xz -C $G; source $G/env.sh; for i in 1 2; do $G/lib --ignored --nocapture --exact backend::cuda::probe::local_reduce_layers_probe 2>&1 | grep -E "^probe|panicked"; $G/lib --ignored --nocapture --exact backend::cuda::probe::graph::graph_launch_probe 2>&1 | grep -E "^probe|panicked" | head -10; done
# (`run` returned only its output: summary.txt is that output as the tool gave it.)
