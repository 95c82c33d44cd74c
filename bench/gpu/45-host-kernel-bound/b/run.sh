#!/bin/bash
# Run 45b (one H100, 2026-12-06, run a's machine still held, 54 s of device time left): the
# anchors run a left out, on the same machine right after it.
# Staged by: run a's staging (.gpu as run a carried it)
# Invoked as: the command below, as given to `run` with carry [".gpu", ".gl"]
source .gpu/env.sh >/dev/null 2>&1; timeout 40 python3 .gpu/anchors.py --sizes 4K,1M --iters 10 2>&1 | tail -2 | tee $OUT/anchors.txt
