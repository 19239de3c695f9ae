#!/usr/bin/env python3
"""first_only_check.py — the Coll/P2p paths whose every GPU sample is a
first-call one, on real runs: what the summary says of them, what the
former fallback said, and what KernelCh on every call measured.
(test/gpu/estimate_check.sh leaves the runs; this reads their summaries.)

  first_only_check.py --measured DIR... --sampled DIR...

Each DIR is one run of collprof-gpu-app under collprof with the MPI layer,
so DIR/prof/summary.json exists.  "Measured" runs had KernelCh on every
call (COLLPROF_GPU_SAMPLE=1): a path's GPU time per call is its gpu_ns over
its samples.  "Sampled" runs had the default 1 in N.  For each path that
some sampled run marks gpu_first_only (collate/reduce.h: no periodic
sample on any rank), per sampled run: calls, samples, the first-call
samples' mean per call (the summary's gpu_call_ns there, which the former
fallback lent to every other call: its estimate was that times the
calls), and the measured runs' median GPU time per call for the path; the
ratio of the two says how far the former estimate was off.  Then how much
of the measured runs' Coll/P2p GPU time such paths hold.  A report, not a
check.
"""
import json
import os
import statistics
import sys


def load(d):
    with open(os.path.join(d, "prof", "summary.json")) as f:
        s = json.load(f)
    return {p["path"]: p for p in s["paths"]
            if p.get("leafType") in ("ncclProfileColl", "ncclProfileP2p")}


def main(argv):
    if "--measured" not in argv or "--sampled" not in argv:
        print(__doc__.split("\n\n")[1])
        return 2
    i, j = argv.index("--measured"), argv.index("--sampled")
    meas = [load(d) for d in (argv[i + 1:j] if i < j else argv[i + 1:])]
    samp = [(d, load(d)) for d in (argv[j + 1:] if j > i else argv[j + 1:i])]
    per_call = {}   # path -> [measured GPU ns per call, one per run]
    total = []      # measured runs' Coll/P2p GPU ns
    for m in meas:
        total.append(sum(p.get("gpu_ns", 0) for p in m.values()))
        for path, p in m.items():
            if p.get("gpu_samples"):
                per_call.setdefault(path, []).append(p["gpu_ns"] / p["gpu_samples"])
    fo = sorted({path for _, s in samp for path, p in s.items() if p.get("gpu_first_only")})
    print("paths with first-call samples alone in some sampled run: %d" % len(fo))
    print("%-58s %6s %4s %12s %12s %8s %12s" % ("path (run)", "calls", "S", "first us/c", "measured", "ratio",
                                                 "former est s"))
    share = []
    for path in fo:
        ref = statistics.median(per_call[path]) if path in per_call else None
        for d, s in samp:
            p = s.get(path)
            if not p or not p.get("gpu_first_only"):
                continue
            first = p["gpu_ns"] / p["gpu_samples"]
            print("%-58s %6d %4d %12.1f %12s %8s %12.6f" % (
                (path[-46:] + " (" + os.path.basename(d.rstrip("/")) + ")"), p["calls"], p["gpu_samples"],
                first / 1e3, "%.1f" % (ref / 1e3) if ref else "-", "%.2f" % (first / ref) if ref else "-",
                first * p["calls"] / 1e9))
        if ref:
            share.append(sum(m[path]["gpu_ns"] / m[path]["gpu_samples"] * m[path]["calls"]
                             for m in meas if path in m and m[path].get("gpu_samples")))
    if total and share:
        print("their measured GPU time: %.6f s per measured run (mean), of %.6f s of Coll/P2p GPU time (median)" %
              (sum(share) / len(meas) / 1e9, statistics.median(total) / 1e9))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
