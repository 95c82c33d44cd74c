#!/usr/bin/env python3
"""Floors of one GPU, measured on the machine it runs on: what no library can go under.

Run it in the same command as the perf tool (like anchors.py), so the floors and our figures come
from one machine. Two kinds of floor:

  link   the PCIe link alone: pinned host->device and device->host, each alone and both at once
         (two streams), 1 GiB each (GB/s). A host-staged move between two APIs on ONE GPU runs
         both directions at once over the same link, so its ceiling is the "both" row.
  trip   the round trip of the smallest GPU work, 4 KiB f32, each call timed alone (median and
         10th percentile of --iters, microseconds):
           sync        a stream synchronize with nothing queued
           memset      one driver memset (cuMemsetD32Async through ctypes) + stream synchronize
           add         torch.add into a preallocated output + stream synchronize
           add_event   torch.add, an event recorded and synchronized
           two_stream  one add on each of two streams, the second waiting on an event of the
                       first's inputs (a 2-member one-shot on one GPU) + both synchronized
           h2d_add_d2h a pinned 4 KiB upload, the add, the download, one synchronize (a
                       one-GPU-plus-host all_reduce's work)

Usage: python3 floors.py [--iters 2000] [--json out.json]
"""
import argparse, ctypes, json, statistics, time

import torch


def link(gib=1, reps=5):
    n = (gib << 30) // 4
    h1 = torch.empty(n, dtype=torch.float32, pin_memory=True).normal_()
    h2 = torch.empty(n, dtype=torch.float32, pin_memory=True)
    d1 = torch.empty(n, dtype=torch.float32, device="cuda")
    d2 = torch.randn(n, dtype=torch.float32, device="cuda")
    s_up, s_down = torch.cuda.Stream(), torch.cuda.Stream()
    nbytes = n * 4

    def best(fn):
        fn()
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t)
        return statistics.median(times)

    def up():
        with torch.cuda.stream(s_up):
            d1.copy_(h1, non_blocking=True)

    def down():
        with torch.cuda.stream(s_down):
            h2.copy_(d2, non_blocking=True)

    def both():
        up()
        down()

    t_up, t_down, t_both = best(up), best(down), best(both)
    return {
        "bytes": nbytes,
        "h2d_GBps": round(nbytes / t_up / 1e9, 2),
        "d2h_GBps": round(nbytes / t_down / 1e9, 2),
        "both_each_way_GBps": round(nbytes / t_both / 1e9, 2),
    }


def cuda_driver():
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuMemsetD32Async.argtypes = [ctypes.c_uint64, ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p]
    lib.cuStreamSynchronize.argtypes = [ctypes.c_void_p]
    return lib


def trip(iters):
    numel = 1024
    a = torch.randn(numel, device="cuda")
    b = torch.randn(numel, device="cuda")
    c = torch.empty(numel, device="cuda")
    c2 = torch.empty(numel, device="cuda")
    host = torch.randn(numel, pin_memory=True)
    back = torch.empty(numel, pin_memory=True)
    dev = torch.empty(numel, device="cuda")
    s0, s1 = torch.cuda.Stream(), torch.cuda.Stream()
    ev, ready = torch.cuda.Event(), torch.cuda.Event()
    lib = cuda_driver()
    raw = ctypes.c_void_p(s0.cuda_stream)

    def sync():
        s0.synchronize()

    def memset():
        lib.cuMemsetD32Async(c.data_ptr(), 0, numel, raw)
        lib.cuStreamSynchronize(raw)

    def add():
        with torch.cuda.stream(s0):
            torch.add(a, b, out=c)
        s0.synchronize()

    def add_event():
        with torch.cuda.stream(s0):
            torch.add(a, b, out=c)
            ev.record(s0)
        ev.synchronize()

    def two_stream():
        with torch.cuda.stream(s0):
            ready.record(s0)
            torch.add(a, b, out=c)
        with torch.cuda.stream(s1):
            s1.wait_event(ready)
            torch.add(a, b, out=c2)
        s0.synchronize()
        s1.synchronize()

    def h2d_add_d2h():
        with torch.cuda.stream(s0):
            dev.copy_(host, non_blocking=True)
            torch.add(dev, a, out=c)
            back.copy_(c, non_blocking=True)
        s0.synchronize()

    rows = {}
    for name, fn in [("sync", sync), ("memset", memset), ("add", add), ("add_event", add_event),
                     ("two_stream", two_stream), ("h2d_add_d2h", h2d_add_d2h)]:
        for _ in range(100):
            fn()
        times = []
        for _ in range(iters):
            t = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t) * 1e6)
        times.sort()
        rows[name] = {"median_us": round(statistics.median(times), 2), "p10_us": round(times[len(times) // 10], 2)}
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--json")
    args = ap.parse_args()
    out = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}
    out["trip_4KiB"] = trip(args.iters)
    out["link_1GiB"] = link()
    print(json.dumps(out, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
