#!/usr/bin/env python3
"""ab_passes.py — several alternated passes of test/gpu/ab.sh, side by side.

  ab_passes.py RUN_OUT

RUN_OUT holds pN/CONFIG/app/ab.json, one folder per pass (ab.sh with
PASSES=n, which runs the configurations in reversed order every other
pass, so that drift over the lease hits each alike).  One pass's verdict
moves by more than the differences in question (a host runs its paused
calls fast in one pass and slow in the next), so configurations are
compared pass by pass, in one lease.

Per configuration (all ops together, in the order given): each pass's
median over the sizes of the per-size median paired on/off ratio (the
figure ab_report.py gives per size), the median of those over the passes,
and in how many passes it was below the first configuration's (the
baseline: list it first), with the two-sided sign test's p for that count
over the passes where the two differ (8 of 8 gives 0.008, 7 of 8 0.070,
6 of 8 0.289): how far "lower in k of n" tells a difference from the
passes' own spread.  Then per size, the median over the passes of
that size's median paired ratio, for every configuration, and the sizes
above 1.03 (the issue's "no size more than 3% slower").  Last, per size,
every paired round of every pass pooled: the median ratio and a
distribution-free 95% interval for it (order statistics of the binomial,
as the sign test), and per configuration the sizes whose pooled median is
above 1.03, telling those whose whole interval lies above 1.03 (slower
beyond the rounds' noise) from those whose interval reaches below it.
Rounds of one pass share a process, so the interval is narrower than
fully independent runs would give; the median over passes above does not
assume that.

Then each collprof configuration against the do-nothing plugin with its
mask (FLOORS: collprof-all over noop-all, collprof over noop-default and
noop-sampled, collprof-gs0 over noop-default, collprof-api over noop-api),
where both ran: pass by pass, its mean bus bandwidth ratio (on/off, as
ab_report.py computes it) over the floor's, and in how many passes that is
within 1%; per size the median over the passes of its median paired ratio
over the floor's, and the sizes more than 3% above the floor by it.  Both
ran in the same pass, so drift between passes cancels; this is the issue's
"every event on every call within 1% of the do-nothing plugin with the
same mask", judged over all passes."""
import json
import math
import os
import sys

from ab_report import median, sign_p, size_str, summary   # the same figures ab_report.py prints per pass

# (configuration, its floor): ab.sh's pairs, the do-nothing plugin with the same mask
FLOORS = [("collprof-all", "noop-all"), ("collprof", "noop-default"), ("collprof", "noop-sampled"),
          ("collprof-gs0", "noop-default"), ("collprof-api", "noop-api")]


def load_summaries(pdir):
    """{config: ab_report.summary of its ab.json} of one pass folder."""
    out = {}
    for c in sorted(os.listdir(pdir)):
        try:
            with open(os.path.join(pdir, c, "app", "ab.json")) as fh:
                out[c] = summary(json.load(fh))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


def load_pairs(pdir):
    """{config: {(op, bytes): [paired on/off ratio of each round]}} of one pass folder."""
    out = {}
    for c in sorted(os.listdir(pdir)):
        f = os.path.join(pdir, c, "app", "ab.json")
        try:
            with open(f) as fh:
                ab = json.load(fh)
        except (OSError, ValueError):
            continue
        out[c] = {(r["op"], r["bytes"]): [a / b for a, b in zip(r["on_us"], r["off_us"]) if a > 0 and b > 0]
                  for r in ab["results"]}
    return out


def pass_medians(pairs):
    """{config: {(op, bytes): median paired ratio}} of one pass's load_pairs."""
    return {c: {k: median(v) for k, v in sizes.items()} for c, sizes in pairs.items()}


def median_interval(v, conf=0.95):
    """(lo, hi): the order statistics x_(k), x_(n-k+1) (1-based) with the
    largest k whose two binomial(n, 1/2) tails below k stay within
    1 - conf, so that [lo, hi] holds the median with at least that
    probability; (min, max) when n is too small for any k >= 1 to do so
    (n < 6 at 95%), None for no values."""
    s = sorted(v)
    n = len(s)
    if not n:
        return None
    k, tail = 0, 0.0
    while k < n // 2:
        t = tail + math.comb(n, k) / 2.0 ** n   # P(fewer than k + 1 below the median)
        if 2 * t > 1 - conf:
            break
        tail, k = t, k + 1
    k = max(k, 1)
    return s[k - 1], s[n - k]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    top = sys.argv[1]
    passes = sorted((d for d in os.listdir(top) if d[:1] == "p" and d[1:].isdigit()), key=lambda d: int(d[1:])) \
        if os.path.isdir(top) else []
    pairs = [load_pairs(os.path.join(top, d)) for d in passes]   # read once: per pass and pooled
    runs = [pass_medians(p) for p in pairs]
    runs = [r for r in runs if r]
    if not runs:
        sys.exit("ab_passes.py: no pN/CONFIG/app/ab.json under %s" % top)
    order = []
    order_file = os.path.join(top, "configs")
    if os.path.exists(order_file):
        order = open(order_file).read().split()
    for r in runs:
        for c in r:
            if c not in order:
                order.append(c)
    order = [c for c in order if any(c in r for r in runs)]
    base = order[0]
    per_pass = {c: [median(list(r[c].values())) if c in r else None for r in runs] for c in order}
    print("# %d passes; per pass: the median over sizes of the per-size median paired on/off ratio" % len(runs))
    w = max(len(c) for c in order)
    for c in order:
        v = per_pass[c]
        got = [x for x in v if x is not None]
        below = sum(1 for x, b in zip(v, per_pass[base]) if x is not None and b is not None and x < b)
        both = sum(1 for x, b in zip(v, per_pass[base]) if x is not None and b is not None)
        above = sum(1 for x, b in zip(v, per_pass[base]) if x is not None and b is not None and x > b)
        print("  %-*s  %s  | median %.4f%s" % (w, c, " ".join("%.4f" % x if x is not None else "  -   " for x in v),
                                              median(got), "" if c == base else
                                              "; below %s in %d of %d passes (sign test p = %.3f)"
                                              % (base, below, both, sign_p(below, below + above))))
    keys = []
    for r in runs:
        for c in r.values():
            for k in c:
                if k not in keys:
                    keys.append(k)
    keys.sort(key=lambda k: (k[0], k[1]))
    print("#\n# per size: median over the passes; columns in the order above")
    for i, c in enumerate(order):
        print("#   [%d] %s" % (i, c))
    print("  %-12s %s" % ("op size", " ".join("%8s" % ("[%d]" % i) for i in range(len(order)))))
    over = {c: [] for c in order}
    for k in keys:
        row = []
        for c in order:
            m = median([r[c][k] for r in runs if c in r and k in r[c]])
            row.append(m)
            if m > 1.03:
                over[c].append("%s %s" % (k[0], size_str(k[1])) if len({x[0] for x in keys}) > 1 else size_str(k[1]))
        print("  %-12s %s" % ((k[0][:6] + " " + size_str(k[1])), " ".join("%8.4f" % m for m in row)))
    for i, c in enumerate(order):
        print("# [%d] %s: %d of %d sizes above 1.03 by their median over the passes%s" %
              (i, c, len(over[c]), len(keys), (" (" + ", ".join(over[c]) + ")") if over[c] else ""))
    pooled(pairs, order, keys)
    floors([load_summaries(os.path.join(top, d)) for d in passes])


def floors(sums):
    """Each configuration over its floor, pass by pass (module docstring);
    sums: load_summaries of each pass."""
    for a, f in FLOORS:
        both = [s for s in sums if a in s and f in s]
        if not both:
            continue
        ops = list(dict.fromkeys(op for s in both for op in s[a] if op in s[f]))
        for op in ops:
            got = [(s[a][op], s[f][op]) for s in both if op in s[a] and op in s[f]]
            bw = [ra[1] / rf[1] for ra, rf in got if rf[1] > 0 and not math.isnan(ra[1] / rf[1])]
            if not bw:
                continue
            within = sum(1 for x in bw if x >= 0.99)
            print("#\n# %s over %s, %s, pass by pass: mean bus bandwidth ratio over the floor's" % (a, f, op))
            print("  busbw  %s  | median %.4f; within 1%% in %d of %d passes" %
                  (" ".join("%.4f" % x for x in bw), median(bw), within, len(bw)))
            sizes = sorted({b for ra, rf in got for b in ra[0] if b in rf[0]})
            over = []
            for b in sizes:
                v = [ra[0][b] / rf[0][b] for ra, rf in got if b in ra[0] and b in rf[0] and rf[0][b] > 0]
                m = median(v)
                if m > 1.03:
                    over.append(size_str(b))
                print("  %-6s %-6s %8.4f  (%d passes)" % (op[:6], size_str(b), m, len(v)))
            print("# goal check, %s vs %s, %s, %d passes: mean busbw %.4f of the floor's (median over passes) %s 1%%, "
                  "within in %d of %d passes; %d of %d sizes > 3%% above the floor by their median over the passes%s" %
                  (a, f, op, len(bw), median(bw), "within" if median(bw) >= 0.99 else "NOT within", within, len(bw),
                   len(over), len(sizes), (" (" + ", ".join(over) + ")") if over else ""))


def pooled(pairs, order, keys):
    """Per size, every round of every pass together (module docstring);
    pairs: load_pairs of each pass."""
    one_op = len({k[0] for k in keys}) == 1
    name = (lambda k: size_str(k[1])) if one_op else (lambda k: "%s %s" % (k[0], size_str(k[1])))
    print("#\n# per size, the paired rounds of all passes pooled: median [95% interval] (rounds); columns as above")
    over, sig = {c: [] for c in order}, {c: [] for c in order}
    for k in keys:
        cells = []
        for c in order:
            v = [x for p in pairs if c in p and k in p[c] for x in p[c][k]]
            if not v:
                cells.append("%26s" % "-")
                continue
            m, (lo, hi) = median(v), median_interval(v)
            cells.append("%7.4f [%6.4f,%6.4f] (%3d)" % (m, lo, hi, len(v)))
            if m > 1.03:
                over[c].append(name(k))
                if lo > 1.03:
                    sig[c].append(name(k))
        print("  %-12s %s" % ((k[0][:6] + " " + size_str(k[1])), " ".join(cells)))
    for i, c in enumerate(order):
        print("# [%d] %s: %d of %d sizes above 1.03 by the pooled median%s; with the interval above 1.03: %d%s" %
              (i, c, len(over[c]), len(keys), (" (" + ", ".join(over[c]) + ")") if over[c] else "",
               len(sig[c]), (" (" + ", ".join(sig[c]) + ")") if sig[c] else ""))


if __name__ == "__main__":
    main()
