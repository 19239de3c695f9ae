#!/usr/bin/env python3
"""launch_skew.py — why busy timed launches read high where a loop is
host-bound: rank 0's timed launches set beside what the peer rank was
doing at the same moment (test/gpu/run.sh's plain-loop step calls it).

  launch_skew.py RANK0.jsonl RANK1.jsonl [MIN_BYTES]

collprof keeps a timed launch (gpuLaunch record, src/launch_timer.h) in a
path's numbers only when the stream was busy when it was queued: the GPU
had not caught up with the host.  In a loop that the host barely keeps
ahead of (1 MiB on 2 H200s, where issuing a call takes about as long as
running it) that is the exception, and for a collective it has a cause:
this rank's GPU was still busy because its previous kernel waited for a
peer that had fallen behind.  The kernels of such a launch wait for that
peer too, so the busy samples are the slow calls, not a random sample.

For each op and nccl-tests size (Coll bytes x nranks for all-gather and
reduce-scatter; sizes >= MIN_BYTES, default 1 MiB) this prints rank 0's
busy and idle timed launches, the median per-launch time of each kind, and
among the busy ones how many found the peer behind: the peer's timed
launch nearest in host time (both ranks time the same calls: sampling is
by count) started later than rank 0's and had found its own stream idle.
Both traces' "ts" are CLOCK_MONOTONIC microseconds of one host.  It judges
nothing (exit 0); a second trace from another host is not comparable.
"""
import json
import statistics
import sys

OP = {"AllReduce": "allreduce", "AllGather": "allgather", "ReduceScatter": "reducescatter",
      "Broadcast": "broadcast", "Reduce": "reduce"}


def launches(path):
    """(op, nccl-tests bytes) -> [(ts, us per launch, idle)], first launches left out."""
    out = {}
    recs = []
    nranks = {}   # commId -> NCCL ranks (ProfilerLifecycle records' details)
    for line in open(path):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        n = r.get("details", {}).get("nranks") if isinstance(r.get("details"), dict) else None
        if n:
            nranks[r.get("commId")] = int(n)
        if r.get("recordType") == "gpuLaunch" and not r.get("first") and r.get("type") == "ncclProfileColl":
            recs.append(r)
    for r in recs:
        op = OP.get(r.get("func"))
        if not op:
            continue
        k = int(r.get("launches", 1)) or 1
        b = int(r.get("bytes", 0)) * (nranks.get(r.get("commId"), 1) if op in ("allgather", "reducescatter") else 1)
        out.setdefault((op, b), []).append((float(r["ts"]), float(r["gpuDuration"]) / k, bool(r.get("idle"))))
    return {key: sorted(v) for key, v in out.items()}


def med(v):
    return "%.2f" % statistics.median(v) if v else "-"


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: launch_skew.py RANK0.jsonl RANK1.jsonl [MIN_BYTES]")
    a, b = launches(sys.argv[1]), launches(sys.argv[2])
    minb = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 20
    print("# rank 0's timed launches beside the peer's nearest one (host time)")
    print("# %-14s %10s %6s %6s %10s %10s %12s" % ("op", "bytes", "busy", "idle", "busy_us", "idle_us",
                                                 "peer_behind"))
    tot_busy = tot_behind = 0
    for key in sorted(a, key=lambda k: (k[0], k[1])):
        if key[1] < minb:
            continue
        mine, peer = a[key], b.get(key, [])
        busy = [x for x in mine if not x[2]]
        idle = [x for x in mine if x[2]]
        behind = 0
        for ts, _, _ in busy:
            if not peer:
                break
            p = min(peer, key=lambda x: abs(x[0] - ts))
            if p[0] > ts and p[2]:
                behind += 1
        tot_busy += len(busy)
        tot_behind += behind
        print("  %-14s %10d %6d %6d %10s %10s %8d/%-3d" % (key[0], key[1], len(busy), len(idle),
                                                         med([x[1] for x in busy]), med([x[1] for x in idle]),
                                                         behind, len(busy)))
    print("# busy launches that found the peer behind (later and idle): %d of %d" % (tot_behind, tot_busy))


if __name__ == "__main__":
    main()
