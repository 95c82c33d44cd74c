#!/bin/bash
# A fresh clone with an empty cargo home (crates downloaded from crates.io) and no target dir.
export CARGO_HOME=/work/fresh2/home
mkdir -p $CARGO_HOME
cd /work/fresh2/clone
echo "start $(date -u)"; nproc; uptime
s=$(date +%s.%N)
/usr/bin/time -v cargo run --release -p collectives-examples --example quickstart > quickstart.out 2>&1
echo "quickstart exit $? in $(echo "$(date +%s.%N) - $s" | bc) s"
s=$(date +%s.%N)
/usr/bin/time -v cargo test --workspace > test.out 2>&1
echo "test exit $? in $(echo "$(date +%s.%N) - $s" | bc) s"
uptime; echo "end $(date -u)"
