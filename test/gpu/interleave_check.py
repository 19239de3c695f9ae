#!/usr/bin/env python3
"""interleave_check.py — timed launches must not count the application's
own kernels (test/gpu/run.sh, its "gi" step).

  interleave_check.py SWEEP.json RANKFILE.jsonl

SWEEP from `collprof-gpu-app --interleave-us N`: after every collective the
app queued a kernel spinning N us on the same stream, so its CUDA-event
time per call is the collective's plus N.  collprof's gpuLaunch records
(src/launch_timer.h) must time the collective alone: with runs
(COLLPROF_LAUNCH_RUN) a run that spanned the spinning kernels would read
about N more per launch.  So per size, the median per-launch time of the
non-idle attributed launches (a run's span over its launches) must be
below the CUDA-event time minus N/2.  Also printed: runs of more than one
launch read, and launches skipped (runs dropped, which is what the gap
limit is to do here).  Exit 1 when a size fails or no size has samples.
"""
import json
import statistics
import sys

from gpu_time import OP   # NCCL func name -> the app's op name (same folder)


def main():
    sweep = json.load(open(sys.argv[1]))
    inter = float(sweep.get("interleaveUs", 0))
    n = sweep["nranks"]
    per = {}
    multi = skipped = 0
    for line in open(sys.argv[2]):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("recordType") == "rank":
            skipped = r.get("gpuLaunchesSkipped", 0)
        if r.get("recordType") != "gpuLaunch" or r.get("first") or r.get("idle") or not r.get("eventAddr"):
            continue
        op = OP.get(r.get("func"))
        if not op:
            continue
        k = int(r.get("launches", 1)) or 1
        multi += k > 1
        b = int(r.get("bytes", 0)) * (n if op in ("allgather", "reducescatter") else 1)
        per.setdefault((op, b), []).append(float(r["gpuDuration"]) / k)
    bad = compared = 0
    print("# interleaved kernel %.1f us per call; runs of more than one launch read: %d; launches skipped: %d"
          % (inter, multi, skipped))
    print("# %-14s %10s %8s %12s %12s %s" % ("op", "bytes", "samples", "median_us", "cudaevent_us", "limit_us"))
    for s in sweep["results"]:
        v = per.get((s["op"], s["bytes"]))
        if not v:
            continue
        compared += 1
        med = statistics.median(v)
        limit = s["time_us"] - inter / 2
        ok = med < limit
        bad += not ok
        print("  %-14s %10d %8d %12.2f %12.2f %8.2f%s" % (s["op"], s["bytes"], len(v), med, s["time_us"], limit,
                                                         "" if ok else "  holds the app's kernel"))
    print("# interleave: sizes compared %d, holding the app's kernel %d" % (compared, bad))
    return 1 if bad or not compared else 0


if __name__ == "__main__":
    sys.exit(main())
