#!/usr/bin/env python3
"""gpu_estimate_oracle.py — checks each rank's GPU estimate per path
(gpu_est_ns, gpu_est_calls, gpu_outliers, gpu_borrowed_calls of the rank
files' path records)
against the rule of src/gpu_estimate.h, recomputed here from the same
record's gpuSizes table and sharing no code with it (test/gpu_sampling.t),
and each class's own estimate (the entry's last five numbers: GPU ns,
calls covered, outliers, their ns, lent calls) against the same rule class
by class; the classes' GPU ns add up to the path's exactly.

  gpu_estimate_oracle.py PROFDIR

Rule, per size class [smallest bytes, calls, samples, first, ns, first_ns,
max periodic ns]: every call sampled -> its ns, exactly; else first-call
samples once, and of the periodic ones (samples - first) the longest once
when there are at least 2 and it exceeds 10x the mean of the others; the
mean of the rest stands for the class's other calls.  A class without a
periodic sample borrows: geometric between the nearest sampled classes
below and above (by class index), the nearest one's mean beyond them.  A
class whose only periodic sample exceeds 10x what the other sampled classes
would lend it that way, with sampled classes on both sides, counts it once
(an outlier) and borrows too.  No periodic sample in the whole path: only
the first-call samples are covered.  Borrowed calls: those of the classes
that borrowed, but their first-call and outlier samples (the record holds
gpu_borrowed_calls only when there are some).

Prints "ok N paths" or the differences.
"""
import glob
import json
import os
import sys


def cls_index(lo):
    return 0 if lo == 0 else lo.bit_length()


def estimate(sizes):
    rows = []
    for e in sizes:
        lo, calls, s, sf, ns, fns, mx = e[:7]
        if sf > s or fns > ns:
            sf, fns = 0, 0
        rows.append(dict(k=cls_index(lo), calls=calls, s=s, sf=sf, ns=ns, fns=fns, mx=mx,
                         c_ns=0.0, c_calls=0, c_out=0, c_out_ns=0, c_lent=0))
    est, covered, outliers, borrowed = 0.0, 0, 0, 0
    sampled = []          # (k, mean)
    for r in rows:
        if r["s"] >= r["calls"]:
            r["exact"] = True
            est += r["ns"]
            covered += r["calls"]
            r["c_ns"], r["c_calls"] = float(r["ns"]), r["calls"]
            continue
        r["exact"] = False
        p, pns = r["s"] - r["sf"], r["ns"] - r["fns"]
        r["once_ns"], r["once_n"] = r["fns"], r["sf"]
        if p >= 2 and r["mx"] <= pns and r["mx"] > 10.0 * (pns - r["mx"]) / (p - 1):
            r["once_ns"] += r["mx"]
            r["once_n"] += 1
            p -= 1
            pns -= r["mx"]
            outliers += 1
            r["c_out"], r["c_out_ns"] = 1, r["mx"]
        r["mean"] = pns / p if p else None
        r["p"], r["pns"] = p, pns
        if p:
            sampled.append((r["k"], r["mean"]))
    sampled.sort()

    def borrow(k, sampled=sampled):
        below = [m for (j, m) in sampled if j < k]
        above = [(j, m) for (j, m) in sampled if j > k]
        if not below:
            return sampled[0][1]
        if not above:
            return sampled[-1][1]
        jl, ml = [(j, m) for (j, m) in sampled if j < k][-1]
        jh, mh = above[0]
        t = (k - jl) / (jh - jl)
        if ml <= 0 or mh <= 0:
            return ml + (mh - ml) * t
        return ml * (mh / ml) ** t

    lone = []
    for r in rows:
        if r["exact"] or r["p"] != 1:
            continue
        others = [(j, m) for (j, m) in sampled if j != r["k"]]
        if not any(j < r["k"] for j, _ in others) or not any(j > r["k"] for j, _ in others):
            continue
        b = borrow(r["k"], others)
        if b > 0 and r["mean"] > 10.0 * b:
            lone.append(r)
    for r in lone:
        r["once_ns"] += r["mean"]
        r["once_n"] += 1
        r["c_out"] += 1
        r["c_out_ns"] += r["pns"]   # the lone sample, an exact integer
        sampled.remove((r["k"], r["mean"]))
        r["mean"] = None
        outliers += 1

    for r in rows:
        if r["exact"]:
            continue
        rest = max(r["calls"] - r["once_n"], 0)
        est += r["once_ns"]
        r["c_ns"] = r["once_ns"]
        if r["mean"] is not None or sampled:
            m = r["mean"] if r["mean"] is not None else borrow(r["k"])
            if r["mean"] is None:
                borrowed += rest
                r["c_lent"] = rest
            est += m * rest
            covered += r["once_n"] + rest
            r["c_ns"] += m * rest
            r["c_calls"] = r["once_n"] + rest
        else:
            covered += r["once_n"]
            r["c_calls"] = r["once_n"]
    return est, covered, outliers, borrowed, rows


def class_diffs(sizes, rows):
    """Each entry's own estimate (its last five numbers, where written)
    against the rule's per class; the classes' ns must also add up to the
    path's."""
    msgs = []
    for e, r in zip(sizes, rows):
        if len(e) < 12:
            continue
        want = (r["c_calls"], r["c_out"], r["c_out_ns"], r["c_lent"])
        if abs(e[7] - r["c_ns"]) > 1 + 1e-6 * r["c_ns"] or tuple(e[8:12]) != want:
            msgs.append("class %d: plugin ns %d calls/outliers/outlier ns/lent %s, rule %.1f %s" % (
                e[0], e[7], e[8:12], r["c_ns"], want))
    return msgs


def final_paths(rankfile):
    """A rank file's path records, the last one of each local id (a file
    gets its final numbers appended at finalize)."""
    last = {}
    for line in open(rankfile):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("recordType") == "path":
            last[r["local"]] = r
    return list(last.values())


def main():
    bad, n, nb = [], 0, 0
    for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.jsonl"))):
        for p in final_paths(f):
            if "gpuSizes" not in p:
                continue
            n += 1
            est, cov, out, bor, rows = estimate(p["gpuSizes"])
            nb += bor > 0
            cls = class_diffs(p["gpuSizes"], rows)
            if all(len(e) >= 12 for e in p["gpuSizes"]) and sum(e[7] for e in p["gpuSizes"]) != p["gpu_est_ns"]:
                cls.append("classes' ns add up to %d, the path's %d" % (sum(e[7] for e in p["gpuSizes"]), p["gpu_est_ns"]))
            if cls:
                bad.append("%s %s: %s" % (os.path.basename(f), p["path"], "; ".join(cls[:3])))
            if (abs(est - p["gpu_est_ns"]) > 1 + 1e-6 * est or cov != p["gpu_est_calls"]
                    or out != p["gpu_outliers"] or bor != p.get("gpu_borrowed_calls", 0)):
                bad.append("%s %s: plugin est %s calls %s outliers %s borrowed %s, rule %.0f %d %d %d" % (
                    os.path.basename(f), p["path"], p["gpu_est_ns"], p["gpu_est_calls"],
                    p["gpu_outliers"], p.get("gpu_borrowed_calls", 0), est, cov, out, bor))
    print("; ".join(bad) if bad else "ok %d paths" % n)
    if "-v" in sys.argv[2:]:
        print("# %d of them with borrowed calls" % nb)


if __name__ == "__main__":
    main()
