#!/bin/bash
# Run 53a: the probe staged as 52b and never run (`backend::cuda::probe::mixed_all_reduce_layers_probe`:
# the `cuda:0, cpu:0` all_reduce's kernel, its one-pass call and the whole library call, the host
# input carried in the launch's parameters and read across the bus alternated in one process,
# three rounds); issue 14's 4 KiB rows and the mixed all_reduce at 64 B, 256 B, 4 KiB and 16 KiB:
# c0eb32f (perf: small inputs in a 256-byte block) against 1128fc7 (perf_mid: every carried input
# in the 4 KiB block) and 1cdc032 (perf_old: before the carried path), three interleaved rounds;
# what PyTorch takes for the same small calls, synchronised each time (torch_local.py, below);
# anchors; the carried test on c0eb32f (run b: the other GPU-facing tests).
# Staged by: bash bench/gpu/stage.sh bench/gpu/53-layers/a 1cdc032, then perf_mid (1128fc7's release
#   perf, built in a worktree as stage.sh builds perf_old, stripped) added to .gpu/bins.tar.xz
# Invoked as: timeout -k 5 200 bash .gpu/run.sh 2>&1 | tee $OUT/summary.txt; tar czf $OUT/logs.tgz -C $OUT logs; rm -rf $OUT/logs
G=.gpu
tar xJf $G/bins.tar.xz -C $G && source $G/env.sh && source $G/steps.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
t probe lib 60 --ignored --exact backend::cuda::probe::mixed_all_reduce_layers_probe --nocapture
grep -h "probe:" $L/t_probe.log
I="--sizes 4K --iters 1000 --warmup 100"
D2=cuda:0,cuda:1 C8=cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5,cpu:6,cpu:7
C3=cuda:0,cpu:0,cpu:1,cpu:2 M="--sizes 64,256,4K,16K --iters 1000 --warmup 100"
for r in 1 2 3; do
  for b in perf_old perf_mid perf; do
    p i_lr_${b}_$r $b --op local_reduce --devices cuda:0 $I
    p m_ch_${b}_$r $b --op all_reduce --devices cuda:0,cpu:0 $M
    p m_c3_${b}_$r $b --op all_reduce --devices $C3 $M
    COLLECTIVES_CUDA_DEVICES=0,0 p i_v2_${b}_$r $b --op all_reduce --devices $D2 $I
  done
  p i_c8_perf_$r perf --op all_reduce --devices $C8 $I
done
# PyTorch's figures for the same small calls, each synchronised as the perf tool's are (medians
# of 3000 after 300, µs): a 4 KiB f32 add on cuda:0 (local_reduce), and a cuda:0 tensor plus a
# pageable host tensor with the sum copied back to the host (the cuda:0, cpu:0 all_reduce).
cat > $G/torch_local.py <<'PY'
import time, torch
d = torch.device("cuda:0")
n = 1024
a, b, o = torch.rand(n, device=d), torch.rand(n, device=d), torch.empty(n, device=d)
h, hout = torch.rand(n), torch.empty(n)
def med(fn, iters=3000, warm=300):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(iters):
        t0 = time.perf_counter(); fn(); ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2] * 1e6
def mixed():
    torch.add(a, h.to(d), out=o); hout.copy_(o); torch.cuda.synchronize()
rows = [
    ("torch.cuda.synchronize alone", torch.cuda.synchronize),
    ("torch.add(a, b, out=o) + synchronize, 4 KiB f32 on cuda:0", lambda: (torch.add(a, b, out=o), torch.cuda.synchronize())),
    ("torch.cuda.comm.reduce_add([a, b], 0) + synchronize", lambda: (torch.cuda.comm.reduce_add([a, b], 0), torch.cuda.synchronize())),
    ("a + pageable host h copied in, sum copied to a host tensor + synchronize", mixed),
]
for r in (1, 2):
    for name, fn in rows:
        print(f"torch: round {r}: {med(fn):7.2f} us median  {name}", flush=True)
assert torch.allclose(hout, a.cpu() + h)
PY
timeout 60 python3 $G/torch_local.py > $L/torch_local.log 2>&1; grep -h -E "torch:|Error" $L/torch_local.log
timeout 30 python3 $G/anchors.py --sizes 4K,1M --iters 10 > $L/anchors.log 2>&1; tail -2 $L/anchors.log
export REQUIRE_CUDA=1 REQUIRE_VULKAN=1
t carried lib 60 carries --nocapture
grep -h "carried in" $L/t_carried.log
grep -h -E "panicked|FAILED" $L/t_*.log | head -20
date
