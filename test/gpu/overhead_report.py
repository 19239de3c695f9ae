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

When the runs were made with the app's --iter-times (overhead.sh
ITER_TIMES=1: sweep.json results carry iter_us, iter_host_us and
host_start_ns), a further section per op: for the 3 sizes of each
configuration slowest against the baseline, the median and the largest
single call, how much of the mean's excess over the baseline that largest
call explains, and when the size ran (host time after the run's first size)
and how long the host took to issue the largest call: one slow call or a
cost spread over all calls, and where in the run to look for its cause.
"""
import glob
import json
import math
import os
import statistics
import sys


def load(run_out, cfg):
    """The repetitions of cfg in order, each sweep.json with its repetition
    number (the N of RUN_OUT/cfg.N) as "_rep"; a run without one is left out."""
    reps = []
    for d in glob.glob(os.path.join(run_out, cfg + ".*")):
        f = os.path.join(d, "app", "sweep.json")
        rep = d.rsplit(".", 1)[1]
        if os.path.exists(f) and rep.isdigit():
            s = json.load(open(f))
            s["_rep"] = int(rep)
            reps.append(s)
    return sorted(reps, key=lambda s: s["_rep"])


TOP = 3   # sizes per configuration in the single-call section


def iter_stats(sweep, op, b):
    """One repetition's single-call figures for (op, bytes), or None without
    --iter-times data."""
    rs = [r for r in sweep["results"] if r["op"] == op and r["bytes"] == b]
    if not rs or not rs[0].get("iter_us"):
        return None
    r = rs[0]
    v = r["iter_us"]
    n = len(v)
    k = max(range(n), key=lambda i: v[i])
    med = statistics.median(v)
    trimmed = (sum(v) - v[k]) / (n - 1) if n > 1 else v[k]
    starts = [x["host_start_ns"] for x in sweep["results"] if "host_start_ns" in x]
    h = r.get("iter_host_us") or []
    gaps = [h[i] - (h[i - 1] if i else 0.0) for i in range(len(h))]
    j = max(range(len(gaps)), key=lambda i: gaps[i]) if gaps else -1
    return {"mean": sum(v) / n, "med": med, "max": v[k], "at": k, "n": n, "trimmed": trimmed,
            "top1": (v[k] - med) / n,
            "start_ms": (r["host_start_ns"] - min(starts)) / 1e6 if "host_start_ns" in r else None,
            "gap_at_max": gaps[k] if k < len(gaps) else None,
            "gap_max": gaps[j] if gaps else None, "gap_max_at": j}


def iter_section(op, data, cfgs, lat, sizes):
    """Single calls of the slowest sizes (needs --iter-times data)."""
    base = cfgs[0]
    st = {c: {b: [x for x in (iter_stats(s, op, b) for s in data[c]) if x] for b in sizes}
          for c in cfgs}
    if not any(st[c][b] for c in cfgs for b in sizes) or not any(st[base][b] for b in sizes):
        return
    med = lambda c, b, key: statistics.median(x[key] for x in st[c][b])  # noqa: E731
    print("\n## %s: single calls (--iter-times), the %d sizes of each configuration slowest "
          "against %s" % (op, TOP, base))
    print("# medians over repetitions.  mean/med/max: us per call (max: the largest single call,"
          " @ its index);\n# excess: mean - %s's mean; top1: what the largest call adds to the "
          "mean ((max - med) / calls);\n# expl: top1 / excess; rest: the excess without each "
          "run's largest call (trimmed means);\n# start: host time of the size's timed loop after "
          "the run's first size (ms); gap: host us\n# spent issuing the largest call (from the "
          "previous call's issue; ~excess x calls = the host stalled)" % base)
    print("%-13s %9s %6s %8s %8s %9s %4s %8s %8s %8s %7s %6s %7s %9s %8s" %
          ("config", "bytes", "ratio", "mean", "med", "max", "@i", base[:4] + ":med",
           base[:4] + ":max", "excess", "top1", "expl%", "rest", "start_ms", "gap"))
    for c in cfgs[1:]:
        ranked = sorted(((lat[c][b] / lat[base][b], b) for b in sizes
                         if lat[base].get(b) and lat[c].get(b) and st[c][b] and st[base][b]),
                        reverse=True)[:TOP]
        for ratio, b in ranked:
            excess = med(c, b, "mean") - med(base, b, "mean")
            top1 = med(c, b, "top1")
            rest = med(c, b, "trimmed") - med(base, b, "trimmed")
            at = statistics.median_low(x["at"] for x in st[c][b])
            starts = [x["start_ms"] for x in st[c][b] if x["start_ms"] is not None]
            gaps = [x["gap_at_max"] for x in st[c][b] if x["gap_at_max"] is not None]
            print("%-13s %9d %6.3f %8.2f %8.2f %9.2f %4d %8.2f %8.2f %8.3f %7.3f %6s %7.3f %9s %8s" %
                  (c[:13], b, ratio, med(c, b, "mean"), med(c, b, "med"), med(c, b, "max"), at,
                   med(base, b, "med"), med(base, b, "max"), excess, top1,
                   "%.0f" % (100 * top1 / excess) if excess > 0 else "n/a", rest,
                   "%+.3f" % statistics.median(starts) if starts else "-",
                   "%.1f" % statistics.median(gaps) if gaps else "-"))
            for who in (c, base):
                print("#   %-12s %d B per repetition: %s" % (who, b, "; ".join(
                    "max %.1f@%d%s%s" % (x["max"], x["at"],
                                         " start %+.3f ms" % x["start_ms"]
                                         if x["start_ms"] is not None else "",
                                         " gap %.1f, largest gap %.1f@%d" %
                                         (x["gap_at_max"], x["gap_max"], x["gap_max_at"])
                                         if x["gap_max"] is not None else "")
                    for x in st[who][b])))


def sign_p(k, n):
    """Two-sided sign test: the chance of a split at least as uneven as k of
    n (slower in k repetitions) if slower and faster were equally likely."""
    m = min(k, n - k)
    tail = sum(math.comb(n, i) for i in range(m + 1)) / 2.0 ** n
    return min(1.0, 2 * tail)


SMALL = 65536   # sizes up to this: NCCL is bound by the host there (GPU idle between calls)


def paired_section(op, ser, cfgs, sizes):
    """Each repetition runs every configuration back to back, so a
    configuration and the baseline of the same repetition (by its number,
    so a failed run shifts nothing) form a pair.  Per size: in how many
    pairs the configuration was slower (ties left out) and the two-sided
    sign test of that split (small p: a real difference, whatever the
    spread between repetitions).  Then, over the host-bound sizes, the
    median paired excess per call of each configuration; with noop-default
    and collprof-notrace present, collprof's excess split into NCCL's own
    cost of emitting the default events, collprof's bookkeeping and its
    trace, each part from its own pairs (not from differences of medians,
    which carry the noise of both); with collprof-all-notrace present,
    collprof-all's excess over noop-all split the same way into
    bookkeeping and trace."""
    base = cfgs[0]
    by_rep = {c: {x[2]: x[1] for x in ser[c]} for c in cfgs}

    def pairs(a, b, sz):
        return [(by_rep[a][r][sz], by_rep[b][r][sz]) for r in sorted(set(by_rep[a]) & set(by_rep[b]))
                if sz in by_rep[a][r] and sz in by_rep[b][r]]

    def small_excess(a, b):
        per_size = [[x - y for x, y in pairs(a, b, sz)] for sz in sizes if sz <= SMALL]
        per_size = [statistics.median(d) for d in per_size if d]
        return statistics.median(per_size) if per_size else None

    if min(len(set(by_rep[c]) & set(by_rep[base])) for c in cfgs) < 3:
        return
    print("\n## %s: paired by repetition: slower-than-%s count per size (ties left out), sign test p"
          % (op, base))
    head = "%10s" % "bytes"
    for c in cfgs[1:]:
        head += " %17s" % c[:17]
    print(head)
    for b in sizes:
        line = "%10d" % b
        for c in cfgs[1:]:
            pr = pairs(c, base, b)
            k = sum(1 for x, y in pr if x > y)
            m = sum(1 for x, y in pr if x != y)
            line += " %8s p=%-6.3f" % ("%d/%d" % (k, m), sign_p(k, m) if m else 1.0)
        print(line)
    ex = {c: small_excess(c, base) for c in cfgs[1:]}
    print("median over sizes <= %d B of the paired excess per call (us): %s" %
          (SMALL, ", ".join("%s %+.3f" % (c, v) for c, v in ex.items() if v is not None)))
    def split(title, parts):
        """title, then each (what, a, b) as a's paired excess over b, when
        every configuration named is present"""
        if all(c in cfgs for _, a, b in parts for c in (a, b)):
            print("%s paired by repetition (median over sizes <= %d B, us per call): %s" %
                  (title, SMALL, "; ".join("%s %+.3f (%s - %s)" % (what, small_excess(a, b) or 0.0, a, b)
                                           for what, a, b in parts)))

    split("collprof's excess split, each part",
          (("NCCL emitting the default events", "noop-default", base),
           ("collprof's bookkeeping", "collprof-notrace", "noop-default"),
           ("its trace", "collprof", "collprof-notrace")))
    # every event on every call: what collprof adds to the do-nothing
    # plugin's cost, without and with its trace
    split("collprof-all's excess over noop-all split,",
          (("collprof's bookkeeping", "collprof-all-notrace", "noop-all"),
           ("its trace", "collprof-all", "collprof-all-notrace")))


REGIME_LO, REGIME_HI, REGIME_X = 262144, 2097152, 1.6


def best_section(op, ser, cfgs, sizes):
    """Best of repetitions.  With KernelCh on every call, NCCL on 2 H200
    runs a 256 KiB-2 MiB all-reduce either fast (~15 us at 1 MiB) or 3-4x
    slower, and a run that turns slow stays slow for its remaining sizes;
    which regime a run lands in is random (seen under the do-nothing plugin
    too, and not explained by where the scheduler put NCCL's threads:
    threadmon.py).  Medians over 3-7 repetitions then measure how many runs
    turned slow, not what a plugin costs.  This section gives, per size,
    each configuration's fastest repetition (a plugin's own cost is work
    added to every call, so it shows in the fastest run too), the mean bus
    bandwidth over sizes of those fastest runs, and how many of each
    configuration's runs turned slow (a size of REGIME_LO-REGIME_HI bytes
    slower than REGIME_X times the fastest run of any configuration): a
    plugin that makes slow runs more frequent costs that too."""
    base = cfgs[0]
    best = {c: {b: min(x[1][b] for x in ser[c] if b in x[1]) for b in sizes
                if any(b in x[1] for x in ser[c])} for c in cfgs}
    floor = {b: min(best[c][b] for c in cfgs if b in best[c]) for b in sizes}
    print("\n## %s: best of repetitions (us per call, each configuration's fastest run per size); "
          "ratio to %s" % (op, base))
    head = "%10s" % "bytes"
    for c in cfgs:
        head += " %11s" % c[:11]
    for c in cfgs[1:]:
        head += " %9s" % ("/" + c[:8])
    print(head)
    for b in sizes:
        line = "%10d" % b
        for c in cfgs:
            line += " %11.2f" % best[c].get(b, float("nan"))
        for c in cfgs[1:]:
            line += " %9.3f" % (best[c][b] / best[base][b] if b in best[c] and best[base].get(b) else 0)
        print(line)
    # busbw is bytes / time times a constant per op and size, so the
    # fastest run's busbw at a size is the largest one
    rows = {c: _rows(ser[c]) for c in cfgs}
    bw = {c: statistics.mean(max(r["busbw"] for r in rows[c][b]) for b in sizes if rows[c].get(b))
          for c in cfgs}
    print("mean busbw of the fastest runs per size (GB/s): %s" %
          ", ".join("%s %.3f (%.4f)" % (c, bw[c], bw[c] / bw[base] if bw[base] else 0) for c in cfgs))
    slow = {}
    for c in cfgs:
        slow[c] = [x[2] for x in ser[c]
                   if any(REGIME_LO <= b <= REGIME_HI and x[1].get(b, 0) > REGIME_X * floor[b] for b in sizes)]
    print("runs that turned slow (a size of %d-%d B over %.1fx the fastest): %s" %
          (REGIME_LO, REGIME_HI, REGIME_X,
           ", ".join("%s %d/%d%s" % (c, len(slow[c]), len(ser[c]),
                                    " (reps %s)" % " ".join(map(str, slow[c])) if slow[c] else "")
                     for c in cfgs)))
    if len(cfgs) > 1:
        print("  against %s, Fisher's exact test (two-sided p; small: the configuration changes how "
              "often runs turn slow): %s" %
              (base, ", ".join("%s p=%.3f" % (c, fisher_p(len(slow[c]), len(ser[c]), len(slow[base]), len(ser[base])))
                               for c in cfgs[1:])))


def fisher_p(a, n, b, m):
    """Two-sided Fisher exact test of a slow runs in n against b in m: the
    chance, with the a + b slow runs spread over the n + m at random, of a
    table at most as likely as the one seen."""
    k, tot = a + b, n + m
    if tot == 0:
        return 1.0
    def prob(x):
        return math.comb(k, x) * math.comb(tot - k, n - x) / math.comb(tot, n)
    seen = prob(a)
    return min(1.0, sum(prob(x) for x in range(max(0, k - m), min(k, n) + 1) if prob(x) <= seen * (1 + 1e-9)))


def _rows(series_of_cfg):
    """{bytes: [sweep.json rows]} over one configuration's repetitions, from
    its (busbw, times, rep, rows) series"""
    out = {}
    for x in series_of_cfg:
        for r in x[3]:
            out.setdefault(r["bytes"], []).append(r)
    return out


def main():
    run_out, np_, cfgs = sys.argv[1], sys.argv[2], sys.argv[3:]
    data = {c: load(run_out, c) for c in cfgs}
    base = cfgs[0]
    ops = sorted({r["op"] for reps in data.values() for s in reps for r in s["results"]})
    print("# overhead on %s ranks; repetitions: %s" %
          (np_, ", ".join("%s %d" % (c, len(data[c])) for c in cfgs)))
    for op in ops:
        def series(c):
            """per rep: mean busbw, {bytes: time_us}, repetition number"""
            out = []
            for s in data[c]:
                rs = [r for r in s["results"] if r["op"] == op]
                if rs:
                    out.append((statistics.mean(r["busbw"] for r in rs),
                                {r["bytes"]: r["time_us"] for r in rs}, s["_rep"], rs))
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
            # How to read a miss: collprof's cost is time per call on the
            # host, so it shows where NCCL is bound by the host; a miss
            # inside that size's spread of baseline repetitions is not
            # resolved by this run.
            over = [b for b in sizes if lat[base].get(b) and lat["collprof"].get(b, 0) > 1.03 * lat[base][b]]
            beyond = [b for b in over if lat["collprof"][b] / lat[base][b] - 1 > noise[b]]
            excess = max(((lat["collprof"].get(b, 0) - lat[base][b], b) for b in sizes if lat[base].get(b)),
                         default=(0, 0))
            print("      sizes over 3%%: %d of %d, %d of them beyond that size's noise (%s); largest excess "
                  "per call %+.2f us at %d B" % (len(over), len(sizes), len(beyond),
                                                  ", ".join("%d B" % b for b in beyond) or "none",
                                                  excess[0], excess[1]))
        if "collprof-all" in bw and bw.get("noop-all"):
            print("goal: collprof-all within 1%% of noop-all in mean busbw: %.2f%% (%s)" %
                  (100 * (bw["collprof-all"] / bw["noop-all"] - 1),
                   "met" if bw["collprof-all"] >= 0.99 * bw["noop-all"] else "MISSED"))
            # With KernelCh on every call NCCL's own speed varies far more
            # between runs than without (the do-nothing plugin's runs too),
            # so the difference is read against the spread of noop-all's
            # repetitions: a gap inside it is not resolved by this run.
            na = [x[0] for x in ser["noop-all"]]
            ca = [x[0] for x in ser["collprof-all"]]
            if len(na) > 1 and len(ca) > 1:
                spread_n = (max(na) - min(na)) / statistics.median(na)
                spread_c = (max(ca) - min(ca)) / statistics.median(ca)
                gap = abs(bw["collprof-all"] / bw["noop-all"] - 1)
                print("      spread of repetitions (mean busbw): noop-all %.2f%%, collprof-all %.2f%%; "
                      "the difference is %s noop-all's spread" %
                      (100 * spread_n, 100 * spread_c, "inside" if gap <= spread_n else "beyond"))
        best_section(op, ser, cfgs, sizes)
        paired_section(op, ser, cfgs, sizes)
        iter_section(op, data, cfgs, lat, sizes)


if __name__ == "__main__":
    main()
