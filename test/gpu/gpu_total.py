#!/usr/bin/env python3
"""gpu_total.py — the summary's GPU time per Coll path against the app's
CUDA-event time, over a whole sweep (test/gpu/run.sh prints it; a report,
not a check: the per-size check is gpu_time.py).

  gpu_total.py SWEEP.json SUMMARY.json

For a run of collprof-gpu-app with --phases sweep, every call of op F is
one of the sweep's (warmup + iters) calls at one of its sizes, so the
app's time per call of F is sum over sizes of (warmup + iters) x time_us,
divided by the calls.  When the split phase ran, its calls (each timed by
CUDA events on its stream: sweep.json's "split") are shown beside it: they
run on two communicators' streams at once, and their event times include
waiting to start behind the other stream's kernel, which KernelCh does not
see.  Graph replays make no events and captured calls run only in
replays.  Beside it, per Coll path, the GPU time per call the
summary stands on (gpu_call_ns = gpu_est_ns / calls: per message-size
class on each rank, first-call samples and outliers once), what one mean
of the path's periodic samples would say (first-call samples once, the
estimate before size classes: "pooled"), and the plain mean of all samples
(gpu_ns / gpu_samples, before first-call samples were counted once), each
with its ratio to the app's; and the summary's GPU total (gpu_est_ns), of
which gpu_first_ns is the first-call samples' own time.
The app's CUDA events leave out the kernel launch and the untimed warmup's
first calls (connection set-up), so ratios a little under 1 are expected.
"""
import json
import sys

COLL = {"allreduce": "AllReduce", "allgather": "AllGather", "reducescatter": "ReduceScatter",
        "broadcast": "Broadcast", "reduce": "Reduce"}


def main():
    sweep = json.load(open(sys.argv[1]))
    summ = json.load(open(sys.argv[2]))
    per_call = sweep["iters"] + sweep["warmup"]
    app = {}
    for r in sweep["results"]:
        a = app.setdefault(r["op"], [0, 0.0])
        a[0] += per_call
        a[1] += per_call * r["time_us"]
    # The split phase, when it ran: each of its calls timed by CUDA events
    # on its own stream (NCCL rank 0).  Its calls run on two communicators'
    # streams at once, and an event pair around a call there also holds the
    # time the kernel waits to start behind the other stream's kernel, which
    # KernelCh does not see: it is shown beside the sweep's reference, not
    # merged into it.
    split = sweep.get("split", {})
    paths = {p["path"]: p for p in summ.get("paths", [])}
    print("# %-14s %7s %6s %6s %5s %12s %12s %7s %10s %7s %10s %7s %11s %11s" %
          ("op", "calls", "samp", "first", "outl", "app_us/call", "est_us/call", "ratio", "pooled_us", "ratio",
           "plain_us", "ratio", "est_tot_ms", "first_ms"))
    for op, (calls, us) in app.items():
        f = COLL.get(op)
        if not f:
            continue
        p = paths.get("GroupApi/CollApi:%s/Coll:%s" % (f, f))
        if not p or not p.get("gpu_samples"):
            print("  %-14s no GPU samples in the summary" % op)
            continue
        ref = us / calls
        est = p.get("gpu_call_ns", 0) / 1e3
        plain = p["gpu_ns"] / p["gpu_samples"] / 1e3
        G, S, F, Sf, C = p["gpu_ns"], p["gpu_samples"], p.get("gpu_first_ns", 0), p.get("gpu_first_samples", 0), p["calls"]
        pooled = (F + (G - F) / (S - Sf) * (C - Sf)) / C / 1e3 if S > Sf and C > Sf else plain
        print("  %-14s %7d %6d %6d %5d %12.2f %12.2f %7.3f %10.2f %7.3f %10.2f %7.3f %11.3f %11.3f" %
              (op, p["calls"], p["gpu_samples"], Sf, p.get("gpu_outliers", 0), ref, est, est / ref,
               pooled, pooled / ref, plain, plain / ref, p.get("gpu_est_ns", 0) / 1e6, F / 1e6))
        sp = split.get(op)
        if sp and sp.get("calls"):
            both = (us + sp["us"]) / (calls + sp["calls"])
            print("  #   %s: the split phase's %d calls took %.2f us each by CUDA events (waiting to start "
                  "behind the other stream included); sweep + split: %.2f us/call, est/that %.3f" %
                  (op, sp["calls"], sp["us"] / sp["calls"], both, est / both))
        if p["calls"] != calls * sweep["nranks"]:
            print("  #   %s: summary has %d calls, the sweep made %d on %d ranks (other phases?)" %
                  (op, p["calls"], calls * sweep["nranks"], sweep["nranks"]))


if __name__ == "__main__":
    main()
