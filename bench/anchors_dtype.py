#!/usr/bin/env python3
"""NCCL-from-CuPy anchors per dtype: anchors.py's nccl_suite (same grouped calls, streams, warm-up
and timing: the mean of --iters calls, each synchronized; all_reduce, all_gather, reduce_scatter,
broadcast) for f32 and bf16, so that the perf tool's bf16 rows have an anchor of the same dtype
(anchors.py measures f32 only).

Usage: python3 anchors_dtype.py [--sizes 4M,16M,64M,256M] [--iters 20] [--json out.json]
Sizes are bytes per device, as in anchors.py: all_gather's input and reduce_scatter's output.
"""
import argparse, json, time


def parse_size(s):
    k = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(s[:-1]) * k[s[-1]] if s[-1] in k else int(s)


def suite(n, nbytes, dtype, iters):
    import cupy
    from cupy.cuda import nccl
    nccl_t = {"f32": nccl.NCCL_FLOAT32, "bf16": getattr(nccl, "NCCL_BFLOAT16", 9)}[dtype]
    host_t = {"f32": cupy.float32, "bf16": cupy.uint16}[dtype]
    numel = nbytes // {"f32": 4, "bf16": 2}[dtype]
    comms = nccl.NcclCommunicator.initAll(list(range(n)))
    bufs, outs, streams = [], [], []
    for i in range(n):
        with cupy.cuda.Device(i):
            # bf16 data as raw 16-bit patterns of small finite values (sign/exponent kept low).
            x = cupy.random.standard_normal(numel, dtype=cupy.float32)
            bufs.append(x if dtype == "f32" else (x.view(cupy.uint32) >> 16).astype(cupy.uint16))
            outs.append(cupy.zeros(numel * n, dtype=host_t))
            streams.append(cupy.cuda.Stream(non_blocking=True))

    def grouped(call):
        def run():
            nccl.groupStart()
            for i in range(n):
                with cupy.cuda.Device(i):
                    call(i)
            nccl.groupEnd()
            for s in streams:
                s.synchronize()
        return run

    add = nccl.NCCL_SUM
    ops = {
        "all_reduce": lambda i: comms[i].allReduce(bufs[i].data.ptr, bufs[i].data.ptr, numel, nccl_t, add, streams[i].ptr),
        "all_gather": lambda i: comms[i].allGather(bufs[i].data.ptr, outs[i].data.ptr, numel, nccl_t, streams[i].ptr),
        "reduce_scatter": lambda i: comms[i].reduceScatter(outs[i].data.ptr, bufs[i].data.ptr, numel, nccl_t, add, streams[i].ptr),
        "broadcast": lambda i: comms[i].broadcast(bufs[i].data.ptr, bufs[i].data.ptr, numel, nccl_t, 0, streams[i].ptr),
    }
    row = {"bytes": nbytes, "dtype": dtype}
    factor = {"all_reduce": 2 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
              "broadcast": 1.0}
    for name, call in ops.items():
        run = grouped(call)
        for _ in range(5):
            run()
        t0 = time.perf_counter()
        for _ in range(iters):
            run()
        t = (time.perf_counter() - t0) / iters
        total = nbytes * (n if name in ("all_gather", "reduce_scatter") else 1)
        row[f"nccl_{name}_us"] = t * 1e6
        row[f"nccl_{name}_busbw"] = total / t / 1e9 * factor[name]
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4M,16M,64M,256M")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--json")
    a = ap.parse_args()
    import cupy
    n = cupy.cuda.runtime.getDeviceCount()
    rows = [suite(n, parse_size(s), d, a.iters) for s in a.sizes.split(",") for d in ("f32", "bf16")]
    for r in rows:
        print(json.dumps(r))
    if a.json:
        json.dump({"devices": n, "rows": rows}, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
