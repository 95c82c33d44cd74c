#!/usr/bin/env python3
"""Our busbw against NCCL-from-CuPy over several interleaved rounds of one GPU run.

Usage: python3 bench/compare_rounds.py 'ANCHORS_GLOB' 'PERF_GLOB' [...more PERF_GLOBs]
e.g. (bench/gpu/8-nccl-rounds): 'anchors_dtype_*.json' 'perf_*_*.json'

Files pair by the round number their names end with (anchors_dtype_2.json with perf_ar_2.json);
files whose names end otherwise (anchors_dtype_1g.json) are left out.

Each round ran anchors_dtype.py then the perf tool, so both sides saw the same machine state in
turn. Single rounds swing by up to 10 % either way (the anchor itself did, between rounds a minute
apart), so this reports, per collective, dtype and size: the median busbw over the rounds of each
side and the ratio of those medians; the ratio within each round (ours / the anchor measured just
before it); and the median of those paired ratios. Sizes match as in compare.py.
"""
import glob, json, re, statistics, sys


def rows(path):
    d = json.load(open(path))
    return d["rows"] if isinstance(d, dict) else d


def round_of(path):
    """The round a file belongs to: the number its name ends with (`perf_ar_2.json` is round 2)."""
    m = re.search(r"_(\d+)\.json$", path)
    return int(m.group(1)) if m else None


def main():
    anchors = {round_of(f): {(r["bytes"], r.get("dtype", "f32")): r for r in rows(f)}
               for f in glob.glob(sys.argv[1]) if round_of(f) is not None}
    ours = {}
    for pattern in sys.argv[2:]:
        for f in glob.glob(pattern):
            k = round_of(f)
            for r in rows(f):
                key = (r["op"], r["algo"], r["dtype"], r["size"], r["devices"])
                ours.setdefault(key, {})[k] = r["busbw_gbps"]
    print("| op | algo | dtype | size / device | ours (median) | anchor (median) | ratio of medians | per round | median of paired ratios |")
    print("|---|---|---|---|---|---|---|---|---|")
    order = ["all_reduce", "all_gather", "reduce_scatter", "broadcast"]
    for (op, algo, dtype, size, n) in sorted(ours, key=lambda k: (order.index(k[0]), k[1], k[2] != "f32", k[3])):
        per_dev = size // n if op in ("all_gather", "reduce_scatter") else size
        got = ours[(op, algo, dtype, size, n)]
        pairs = [(got[k], anchors[k][(per_dev, dtype)][f"nccl_{op}_busbw"]) for k in sorted(got)
                 if (per_dev, dtype) in anchors.get(k, {})]
        if not pairs:
            continue
        o = statistics.median(p[0] for p in pairs)
        a = statistics.median(p[1] for p in pairs)
        rounds = " ".join(f"{x / y:.2f}" for x, y in pairs)
        paired = statistics.median(x / y for x, y in pairs)
        print(f"| {op} | {algo} | {dtype} | {per_dev >> 20}M | {o:.1f} | {a:.1f} | {o / a:.3f} | {rounds} | {paired:.3f} |")


if __name__ == "__main__":
    main()
