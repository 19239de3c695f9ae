#!/usr/bin/env python3
"""estimate_check.py — is the sampled GPU estimate right on a whole app?
(test/gpu/estimate_check.sh runs the app; this reads what it left.)

  estimate_check.py [--json] --measured DIR... --sampled DIR...

Each DIR is one run of collprof-gpu-app under collprof: DIR/prof holds the
rank files (*.jsonl), DIR/app/sweep.json the app's CUDA-event times.
"Measured" runs had KernelCh on every call (COLLPROF_GPU_SAMPLE=1): their
GPU time per call is KernelCh's own, for every call whose span survived
(NCCL's timestamp slots are reused when the proxy falls behind; collprof
drops those spans and the estimate stands the rest in for them).
"Sampled" runs had the default 1 in N; for them the per-call GPU time is
recomputed from each rank's gpuSizes table twice, by the plugin's rule
(test/gpu_estimate_oracle.py, which test/gpu_sampling.t holds to the
plugin) and by the same rule without its outlier clause (the longest
periodic sample of a size class counted once when it exceeds 10x the
mean of the others), so that the clause's effect shows on real runs.

Runs differ from one another: one run's GPU total can be two or three
times another's where calls of two communicators wait for each other
(the app's split phase).  The two kinds of run are not paired; the report
compares their distributions, per Coll path (summed over ranks):
median and range of the measured runs, of the estimates with the clause
and without, each median's ratio to the measured median, and how many
sampled runs fall outside the measured runs' range.  The app's own
CUDA-event time per call is shown beside (its split-phase times count a
kernel's wait to start: gpu_total.py).
"""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gpu_estimate_oracle as oracle  # noqa: E402

COLL = {"allreduce": "AllReduce", "allgather": "AllGather", "reducescatter": "ReduceScatter",
        "broadcast": "Broadcast", "reduce": "Reduce"}


def path_records(profdir):
    """Every rank's final path records: {path string: [record, ...]}."""
    out = {}
    for f in sorted(glob.glob(os.path.join(profdir, "*.jsonl"))):
        for p in oracle.final_paths(f):
            out.setdefault(p["path"], []).append(p)
    return out


def without_clause(sizes):
    """The size table with every class's longest sample hidden from the
    outlier test (max 0), so the rule never takes one out."""
    return [[e[0], e[1], e[2], e[3], e[4], e[5], 0] for e in sizes]


def app_ref(rundir):
    """The app's CUDA-event us per call by op (sweep and split phases)."""
    try:
        sw = json.load(open(os.path.join(rundir, "app", "sweep.json")))
    except (OSError, ValueError):
        return {}
    per = sw["iters"] + sw["warmup"]
    acc = {}
    for r in sw.get("results", []):
        a = acc.setdefault(r["op"], [0, 0.0])
        a[0] += per
        a[1] += per * r["time_us"]
    for op, v in sw.get("split", {}).items():
        a = acc.setdefault(op, [0, 0.0])
        a[0] += v["calls"]
        a[1] += v["us"]
    return {op: us / n for op, (n, us) in acc.items() if n}


def one_run(rundir):
    """{op: {"calls", "clause", "plain", "outliers", "samples", "ref"}} in us per call."""
    recs = path_records(os.path.join(rundir, "prof"))
    ref = app_ref(rundir)
    out = {}
    for op, f in COLL.items():
        rs = [r for r in recs.get("GroupApi/CollApi:%s/Coll:%s" % (f, f), []) if "gpuSizes" in r]
        calls = sum(r["calls"] for r in rs)
        if not rs or not calls:
            continue
        a = [oracle.estimate(r["gpuSizes"]) for r in rs]
        b = [oracle.estimate(without_clause(r["gpuSizes"])) for r in rs]
        out[op] = dict(calls=calls,
                       clause=sum(x[0] for x in a) / calls / 1e3,
                       plain=sum(x[0] for x in b) / calls / 1e3,
                       outliers=sum(x[2] for x in a),
                       samples=sum(r.get("gpu_samples", 0) for r in rs),
                       ref=ref.get(op))
    return out


def median(v):
    s = sorted(v)
    n = len(s)
    return None if n == 0 else (s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2)


def compare(measured, sampled):
    """Per op: the distributions and how they compare (see the header)."""
    rep = {}
    for op in COLL:
        # N = 1: every surviving span counted; the mean of all of them (no
        # clause) stands in for the few dropped ones
        m = [r[op]["plain"] for r in measured if op in r]
        if not m:
            continue
        c = [r[op]["clause"] for r in sampled if op in r]
        p = [r[op]["plain"] for r in sampled if op in r]
        lo, hi, mm = min(m), max(m), median(m)
        row = dict(measured=dict(n=len(m), median=mm, min=lo, max=hi,
                                 samples_per_call=median([r[op]["samples"] / r[op]["calls"]
                                                          for r in measured if op in r])),
                   ref=median([r[op]["ref"] for r in measured + sampled
                               if op in r and r[op]["ref"] is not None]))
        for name, v in (("clause", c), ("plain", p)):
            if v:
                row[name] = dict(n=len(v), median=median(v), min=min(v), max=max(v),
                                 ratio=median(v) / mm if mm else None,
                                 outside=sum(1 for x in v if x < lo or x > hi))
        row["outliers"] = sum(r[op]["outliers"] for r in sampled if op in r)
        rep[op] = row
    return rep


def fmt(d):
    return "%8.2f [%7.2f..%8.2f]" % (d["median"], d["min"], d["max"])


def main(argv):
    as_json = "--json" in argv
    argv = [a for a in argv if a != "--json"]
    if "--measured" not in argv or "--sampled" not in argv:
        sys.exit(__doc__)
    i, j = argv.index("--measured"), argv.index("--sampled")
    mdirs = argv[i + 1:j] if i < j else argv[i + 1:]
    sdirs = argv[j + 1:i] if j < i else argv[j + 1:]
    measured = [one_run(d) for d in mdirs]
    sampled = [one_run(d) for d in sdirs]
    rep = compare(measured, sampled)
    if as_json:
        print(json.dumps(rep, indent=1, sort_keys=True))
        return
    print("GPU time per call (us) of each Coll path, over runs: median [min..max]")
    print("measured: KernelCh on every call (%d runs); estimate: 1 in N sampled (%d runs),"
          % (len(measured), len(sampled)))
    print("by the plugin's rule (with the outlier clause) and without that clause;")
    print("ratio: the estimate's median / the measured median; outside: estimates")
    print("beyond the measured runs' range; app ref: CUDA events (median of all runs)")
    for op, r in rep.items():
        print("%-14s measured %s (samples/call %.2f)  app ref %s" % (
            op, fmt(r["measured"]), r["measured"]["samples_per_call"],
            "%.2f" % r["ref"] if r["ref"] is not None else "-"))
        for name, label in (("clause", "with clause"), ("plain", "no clause")):
            if name in r:
                e = r[name]
                print("  %-12s %s  ratio %5.3f  outside %d/%d%s" % (
                    label, fmt(e), e["ratio"] or 0, e["outside"], e["n"],
                    "  (clause fired %d times)" % r["outliers"] if name == "clause" else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
