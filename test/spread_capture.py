#!/usr/bin/env python3
"""spread_capture.py — a capture (shared/fixtures format) with its callbacks
spread evenly in time, for replays with --timed that need activity all
through the run (test/cost_sample.t: NCCL's own captures hold a few calls
at the start, a long gap, then a burst).

  spread_capture.py IN OUT SECONDS

Every record keeps its place in the file; those after the first init get
times from 10 ms after it to SECONDS after it, evenly, in file order (the
replay's one thread per recorded tid sees its callbacks in the same order).
"""
import json
import sys


def main():
    src, dst, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
    recs = [json.loads(line) for line in open(src) if line.strip()]
    first = next(i for i, r in enumerate(recs) if r.get("cb") == "init")
    t0 = recs[first]["t"]
    later = [r for r in recs[first + 1:] if "t" in r]
    span = secs * 1e9 - 1e7
    for k, r in enumerate(later):
        r["t"] = int(t0 + 1e7 + span * k / max(1, len(later) - 1))
    with open(dst, "w") as f:
        for r in recs:
            f.write(json.dumps(r) + "\n")


main()
