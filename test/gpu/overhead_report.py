#!/usr/bin/env python3
"""overhead_report.py — the table of test/gpu/overhead.sh.

  overhead_report.py RUN_OUT NP CONFIG...   (first CONFIG is the baseline)

Reads RUN_OUT/<config>.<rep>/app/sweep.json.  Per configuration: mean bus
bandwidth of the sweep (per op) and latency per size, medians over the
repetitions, ratios to the baseline; the noise floor is the spread among
the baseline's repetitions ((max - min) / median).  Then the issue's goals:
collprof defaults within 1% of the baseline in mean bus bandwidth and no
size more than 3% slower; collprof-all within 1% of noop-all.  Exit 0
always (goals are reported, not asserted: they are measurements).
"""
import glob
import json
import os
import statistics
import sys


def load(run_out, cfg):
    reps = []
    for d in sorted(glob.glob(os.path.join(run_out, cfg + ".*"))):
        f = os.path.join(d, "app", "sweep.json")
        if os.path.exists(f):
            reps.append(json.load(open(f)))
    return reps


def main():
    run_out, np_, cfgs = sys.argv[1], sys.argv[2], sys.argv[3:]
    data = {c: load(run_out, c) for c in cfgs}
    base = cfgs[0]
    ops = sorted({r["op"] for reps in data.values() for s in reps for r in s["results"]})
    print("# overhead on %s ranks; repetitions: %s" %
          (np_, ", ".join("%s %d" % (c, len(data[c])) for c in cfgs)))
    for op in ops:
        def series(c):
            """per rep: mean busbw, {bytes: time_us}"""
            out = []
            for s in data[c]:
                rs = [r for r in s["results"] if r["op"] == op]
                if rs:
                    out.append((statistics.mean(r["busbw"] for r in rs),
                                {r["bytes"]: r["time_us"] for r in rs}))
            return out
        ser = {c: series(c) for c in cfgs}
        if not ser[base]:
            print("# %s: no baseline data" % op)
            continue
        bw = {c: statistics.median(x[0] for x in ser[c]) if ser[c] else 0 for c in cfgs}
        bb = [x[0] for x in ser[base]]
        noise_bw = (max(bb) - min(bb)) / statistics.median(bb) if bb else 0
        print("\n## %s: mean bus bandwidth of the sweep (GB/s), median of repetitions" % op)
        print("%-14s %10s %10s" % ("config", "busbw", "ratio"))
        for c in cfgs:
            print("%-14s %10.3f %10.4f" % (c, bw[c], bw[c] / bw[base] if bw[base] else 0))
        print("noise floor (spread of %s repetitions): %.2f%%" % (base, 100 * noise_bw))
        sizes = sorted(ser[base][0][1].keys())
        lat = {c: {b: statistics.median(x[1][b] for x in ser[c] if b in x[1])
                   for b in sizes if any(b in x[1] for x in ser[c])} for c in cfgs}
        noise = {}
        for b in sizes:
            v = [x[1][b] for x in ser[base] if b in x[1]]
            noise[b] = (max(v) - min(v)) / statistics.median(v) if v else 0
        print("\n## %s: latency per call (us), median of repetitions; ratio to %s" % (op, base))
        head = "%10s %9s" % ("bytes", "noise%")
        for c in cfgs:
            head += " %11s" % c
        for c in cfgs[1:]:
            head += " %9s" % ("/" + c[:8])
        print(head)
        for b in sizes:
            line = "%10d %9.2f" % (b, 100 * noise[b])
            for c in cfgs:
                line += " %11.2f" % lat[c].get(b, float("nan"))
            for c in cfgs[1:]:
                r = lat[c].get(b, 0) / lat[base][b] if lat[base].get(b) else 0
                line += " %9.3f" % r
            print(line)
        # goals
        if "collprof" in bw and bw[base]:
            worst = max(((lat["collprof"].get(b, 0) / lat[base][b], b) for b in sizes
                         if lat[base].get(b)), default=(0, 0))
            print("\ngoal: collprof defaults mean busbw within 1%% of %s: %.2f%% (%s); "
                  "slowest size %d B at %+.2f%% (goal <= 3%%: %s)" %
                  (base, 100 * (bw["collprof"] / bw[base] - 1),
                   "met" if bw["collprof"] >= 0.99 * bw[base] else "MISSED",
                   worst[1], 100 * (worst[0] - 1), "met" if worst[0] <= 1.03 else "MISSED"))
        if "collprof-all" in bw and bw.get("noop-all"):
            print("goal: collprof-all within 1%% of noop-all in mean busbw: %.2f%% (%s)" %
                  (100 * (bw["collprof-all"] / bw["noop-all"] - 1),
                   "met" if bw["collprof-all"] >= 0.99 * bw["noop-all"] else "MISSED"))


if __name__ == "__main__":
    main()
