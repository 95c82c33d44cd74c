#!/usr/bin/env python3
"""Our busbw against NCCL-from-CuPy over several interleaved rounds of one GPU run.

Usage: python3 bench/compare_rounds.py 'ANCHORS_GLOB' 'PERF_GLOB' [...more PERF_GLOBs]

Each round ran anchors_dtype.py then the perf tool, so both sides saw the same machine state in
turn. Single rounds swing by up to 10 % either way (the anchor itself did, between rounds a minute
apart), so this reports, per collective, dtype and size: the median busbw over the rounds of each
side and the ratio of those medians; the ratio within each round (ours / the anchor measured just
before it); and the median of those paired ratios. Sizes match as in compare.py.
"""
import glob, json, statistics, sys


def rows(path):
    d = json.load(open(path))
    return d["rows"] if isinstance(d, dict) else d


def main():
    anchor_files = sorted(glob.glob(sys.argv[1]))
    anchors = [{(r["bytes"], r.get("dtype", "f32")): r for r in rows(f)} for f in anchor_files]
    ours = {}
    for pattern in sys.argv[2:]:
        for k, f in enumerate(sorted(glob.glob(pattern))):
            for r in rows(f):
                key = (r["op"], r["algo"], r["dtype"], r["size"], r["devices"])
                ours.setdefault(key, {})[k] = r["busbw_gbps"]
    print("| op | algo | dtype | size / device | ours (median) | anchor (median) | ratio of medians | per round | median of paired ratios |")
    print("|---|---|---|---|---|---|---|---|---|")
    order = ["all_reduce", "all_gather", "reduce_scatter", "broadcast"]
    for (op, algo, dtype, size, n) in sorted(ours, key=lambda k: (order.index(k[0]), k[1], k[2] != "f32", k[3])):
        per_dev = size // n if op in ("all_gather", "reduce_scatter") else size
        got = ours[(op, algo, dtype, size, n)]
        pairs = [(got[k], a[(per_dev, dtype)][f"nccl_{op}_busbw"]) for k, a in enumerate(anchors)
                 if k in got and (per_dev, dtype) in a]
        if not pairs:
            continue
        o = statistics.median(p[0] for p in pairs)
        a = statistics.median(p[1] for p in pairs)
        rounds = " ".join(f"{x / y:.2f}" for x, y in pairs)
        paired = statistics.median(x / y for x, y in pairs)
        print(f"| {op} | {algo} | {dtype} | {per_dev >> 20}M | {o:.1f} | {a:.1f} | {o / a:.3f} | {rounds} | {paired:.3f} |")


if __name__ == "__main__":
    main()
