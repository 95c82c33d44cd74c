#!/usr/bin/env python3
"""Tables of the perf tool's busbw next to anchors.py's NCCL figures from the same GPU run.

Usage: python3 bench/compare.py ANCHORS.json PERF.json [PERF.json ...]

Sizes: the perf tool's size column is nccl-tests' (for all_gather and reduce_scatter, the total
over all devices); anchors.py's is bytes per device. A perf row of size S is compared with the
anchor row of S (all_reduce, broadcast) or S / n (all_gather, reduce_scatter); rows without a
matching anchor size are listed with '-'. Anchor rows that name a dtype (anchors_dtype.py) are
matched by size and dtype; anchors.py's rows (f32) by size alone.
"""
import json, sys

def load_rows(path):
    d = json.load(open(path))
    return d["rows"] if isinstance(d, dict) else d

def human(b):
    for unit, k in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << k and b % (1 << k) == 0:
            return f"{b >> k}{unit}"
    return str(b)

def main():
    anchors = {(r["bytes"], r.get("dtype")): r for r in load_rows(sys.argv[1])}
    rows = [r for p in sys.argv[2:] for r in load_rows(p)]
    ops = sorted({r["op"] for r in rows}, key=["all_reduce", "all_gather", "reduce_scatter", "broadcast"].index)
    for op in ops:
        print(f"\n### {op}\n")
        print("| size | dtype | algo | time (us) | busbw (GB/s) | NCCL anchor busbw | ratio | #wrong |")
        print("|---|---|---|---|---|---|---|---|")
        for r in (r for r in rows if r["op"] == op):
            per_dev = r["size"] // r["devices"] if op in ("all_gather", "reduce_scatter") else r["size"]
            a_row = anchors.get((per_dev, r["dtype"])) or anchors.get((per_dev, None), {})
            a = a_row.get(f"nccl_{op}_busbw")
            ratio = f"{r['busbw_gbps'] / a:.3f}" if a else "-"
            anchor = f"{a:.1f}" if a else "-"
            print(f"| {human(r['size'])} | {r['dtype']} | {r['algo']} | {r['time_us']:.1f} | "
                  f"{r['busbw_gbps']:.1f} | {anchor} | {ratio} | {r['wrong']} |")

if __name__ == "__main__":
    main()
