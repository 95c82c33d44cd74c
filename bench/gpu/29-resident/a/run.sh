#!/bin/bash
# GPU run 29a (one H200): `resident_worker_probe` — a resident worker kernel polling a mailbox of
# mapped pinned memory against a kernel launched per call, three rounds. Probe only, no anchors.
# Invoked as: timeout -k 5 120 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh
export REQUIRE_CUDA=1
nproc; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in 1 2 3; do
timeout 60 $G/lib --ignored --nocapture --exact backend::cuda::probe::resident_worker_probe > $L/t_probe_$r.log 2>&1; echo "round $r rc=$?"
grep -h -E "^probe:|panicked|test result" $L/t_probe_$r.log
done
date
