#!/usr/bin/env python3
"""ab_report.py — collprof recording against collprof paused, from the
"ab" phase of collprof-gpu-app (test/gpu/app_ab.cu: DIR/ab.json).

  ab_report.py DIR [LABEL]

Per op and size: the median time per call of the blocks with collprof
recording ("on") and paused ("off"), the median of the rounds' paired
ratios on/off, in how many rounds "on" was slower (with the two-sided sign
test's p), and the spread of the "off" blocks themselves (max/min - 1: the
noise a ratio has to beat).  Then per op: the mean bus bandwidth over the
sizes (nccl-tests' factors) from each side's medians and its ratio, and
the sizes more than 3% slower by the median paired ratio, with those whose
sign test says p < 0.05 (the issue's goals: within 1% in mean bus
bandwidth, no size more than 3% slower).

  ab_report.py DIR LABEL --floor FLOOR_DIR [FLOOR_LABEL]

Instead: DIR's on/off ratios against those of FLOOR_DIR, the same phase
run with the do-nothing plugin (test/gpu/ab.sh's noop-* configurations,
whose pause switches the mask as collprof's does): per size the ratio of
the two median paired ratios, then the ratio of the two mean bus bandwidth
ratios (the issue's goal for every event on every call: within 1% of the
do-nothing plugin with the same mask)."""
import json
import math
import sys


def median(v):
    s = sorted(v)
    n = len(s)
    if not n:
        return float("nan")
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def sign_p(k, n):
    """Two-sided sign test: k of n pairs one way, p under 1/2 each."""
    if n == 0:
        return 1.0
    lo = min(k, n - k)
    tail = sum(math.comb(n, i) for i in range(lo + 1)) / 2.0 ** n
    return min(1.0, 2 * tail)


def size_str(b):
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if b >= div and b % div == 0:
            return "%d%s" % (b // div, unit)
    return "%dB" % b


def load(d):
    try:
        with open(d + "/ab.json") as f:
            return json.load(f)
    except OSError:
        sys.exit("ab_report.py: no %s/ab.json (did the ab phase run, with collprof preloaded?)" % d)


def summary(ab):
    """{op: ({bytes: median paired on/off ratio}, mean busbw ratio on/off)}"""
    out = {}
    for op in dict.fromkeys(r["op"] for r in ab["results"]):
        ratios, bw_on, bw_off = {}, 0.0, 0.0
        for r in (r for r in ab["results"] if r["op"] == op):
            on, off = r["on_us"], r["off_us"]
            ratios[r["bytes"]] = median([a / b for a, b in zip(on, off) if a > 0 and b > 0])
            mon, moff = median(on), median(off)
            if mon > 0 and moff > 0:
                bw_on += r["bytes"] / (mon * 1e3) * r["busbw_factor"]
                bw_off += r["bytes"] / (moff * 1e3) * r["busbw_factor"]
        out[op] = (ratios, bw_on / bw_off if bw_off > 0 else float("nan"))
    return out


def against_floor(d, label, fd, flabel):
    a, f = summary(load(d)), summary(load(fd))
    print("# %s against %s: each one's on/off ratio, and the first over the second" % (label, flabel))
    for op in a:
        if op not in f:
            print("# %s: not in %s" % (op, flabel))
            continue
        (ra, ba), (rf, bf) = a[op], f[op]
        print("#\n# %s\n# %8s %9s %9s %9s" % (op, "size", "ratio", "floor", "over"))
        over = []
        for b in ra:
            if b not in rf:
                continue
            x = ra[b] / rf[b]
            if x > 1.03:
                over.append(size_str(b))
            print("  %8s %9.4f %9.4f %9.4f" % (size_str(b), ra[b], rf[b], x))
        x = ba / bf
        print("# %s mean bus bandwidth on/off: %.4f, floor %.4f, ratio %.4f" % (op, ba, bf, x))
        print("# goal check, %s vs %s: %s: mean busbw %.4f of the floor's %s 1%%; %d sizes > 3%% above the floor%s" %
              (label, flabel, op, x, "within" if x >= 0.99 else "NOT within", len(over),
               (" (" + " ".join(over) + ")") if over else ""))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    d = sys.argv[1]
    label = sys.argv[2] if len(sys.argv) > 2 else d
    if len(sys.argv) > 4 and sys.argv[3] == "--floor":
        fd = sys.argv[4]
        against_floor(d, label, fd, sys.argv[5] if len(sys.argv) > 5 else fd)
        return
    ab = load(d)
    print("# %s: collprof recording (on) against paused (off), %d ranks, %d rounds of %d calls per side"
          % (label, ab["nranks"], ab["rounds"], ab["calls"]))
    ops = []
    for r in ab["results"]:
        if r["op"] not in ops:
            ops.append(r["op"])
    verdicts = []
    for op in ops:
        rows = [r for r in ab["results"] if r["op"] == op]
        print("#\n# %s\n# %8s %10s %10s %9s %7s %7s %9s" %
              (op, "size", "on us", "off us", "on/off", "slower", "p", "off noise"))
        bw_on = bw_off = 0.0
        over, over_sig = [], []
        for r in rows:
            on, off = r["on_us"], r["off_us"]
            pairs = [a / b for a, b in zip(on, off) if a > 0 and b > 0]
            ratio = median(pairs)
            slower = sum(1 for a, b in zip(on, off) if a > b)
            p = sign_p(slower, len(pairs))
            noise = max(off) / min(off) - 1 if min(off) > 0 else float("nan")
            mon, moff = median(on), median(off)
            if mon > 0 and moff > 0:
                bw_on += r["bytes"] / (mon * 1e3) * r["busbw_factor"]
                bw_off += r["bytes"] / (moff * 1e3) * r["busbw_factor"]
            if ratio > 1.03:
                over.append(size_str(r["bytes"]))
                if p < 0.05:
                    over_sig.append(size_str(r["bytes"]))
            print("  %8s %10.2f %10.2f %9.4f %4d/%-2d %7.3f %8.1f%%" %
                  (size_str(r["bytes"]), mon, moff, ratio, slower, len(pairs), p, 100 * noise))
        n = len(rows)
        bwr = bw_on / bw_off if bw_off > 0 else float("nan")
        print("# %s mean bus bandwidth: on %.3f GB/s, off %.3f GB/s, ratio %.4f" % (op, bw_on / n, bw_off / n, bwr))
        print("# %s sizes more than 3%% slower (median paired ratio): %d of %d%s; of those with p < 0.05: %d%s" %
              (op, len(over), n, (" (" + " ".join(over) + ")") if over else "", len(over_sig),
               (" (" + " ".join(over_sig) + ")") if over_sig else ""))
        verdicts.append("%s: mean busbw %.4f of paused %s 1%%; %d of %d sizes > 3%% slower (%d with p < 0.05)" %
                        (op, bwr, "within" if bwr >= 0.99 else "NOT within", len(over), n, len(over_sig)))
    for v in verdicts:
        print("# goal check, " + label + ": " + v)


if __name__ == "__main__":
    main()
