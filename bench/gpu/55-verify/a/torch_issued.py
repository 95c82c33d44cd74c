# Run 54a's script with its last check mended. PyTorch's figures beside the perf tool's 4 KiB rows, synchronised each call (medians of 3000
# after 300) and issued back to back with one synchronize at the end (the loop's mean per call,
# 3000 calls after 300, five times): a 4 KiB f32 add on cuda:0 (`local_reduce`), and a cuda:0
# tensor plus a pageable host tensor with the sum copied back to the host (the `cuda:0,cpu:0`
# all_reduce; the copy to pageable memory waits for the add, as a PyTorch user's would).
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
def mean_issued(fn, iters=3000, warm=300):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / iters * 1e6
add = lambda: torch.add(a, b, out=o)
def mixed():
    torch.add(a, h.to(d), out=o); hout.copy_(o)
for r in (1, 2, 3):
    rows = [
        ("add + synchronize each call (median)", med(lambda: (add(), torch.cuda.synchronize()))),
        ("add issued back to back, one synchronize (mean per call)", mean_issued(add)),
        ("mixed: host h in, add, sum to a pageable host tensor (median)", med(mixed)),
    ]
    for name, us in rows:
        print(f"torch: round {r}: {us:7.2f} us  {name}", flush=True)
# The mixed row ran last: `o` holds a + h (run 54a's script compared it with a + b).
assert torch.allclose(hout, a.cpu() + h) and torch.allclose(o.cpu(), a.cpu() + h)
add(); torch.cuda.synchronize()
assert torch.allclose(o, a + b)
