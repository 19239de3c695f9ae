#!/usr/bin/env python3
"""run_spread.py — the report of test/gpu/run_spread.sh: why runs of one
job, with no profiler at all, differ in speed.

  run_spread.py RUN_OUT [OP]        (OP default allreduce)

Reads RUN_OUT/<placement>.<rep>/: app/sweep.json (the app's sweep), and
where run_spread.sh wrote them cpu_before.txt and cpu_after.txt (ms a
fixed CPU loop took just before and just after the run), clocks.txt
(nvidia-smi's GPU clocks after it) and app.log (NCCL's INFO lines with
NCCL_LOG=1).

Per run: the median over the sweep's sizes of OP's time per call.  Runs
are "fast" below the midpoint between the fastest and the slowest run
median, "slow" otherwise (said only when the slowest is over 1.2x the
fastest: below that the runs are one population).  Then, per question:
  placement  fast runs per placement: does pinning ranks make runs fast?
  NCCL       the NCCL INFO lines (numbers, addresses and host names left
             out) in every fast run and in no slow run, and the other way
             round: did NCCL configure itself differently?
  CPU        the CPU loop's range, and Pearson's r between a run's median
             and the mean of its two loop times: do runs follow the host
             CPUs' speed?
Exit 0 (a measurement, not a verdict); 1 when RUN_OUT holds no run.
"""
import glob
import json
import os
import re
import statistics
import sys


def runs(run_out, op):
    """[(placement, rep, median_us, cpu_ms or None, log lines set, clocks)]"""
    out = []
    for f in glob.glob(os.path.join(run_out, "*", "app", "sweep.json")):
        d = os.path.dirname(os.path.dirname(f))
        name = os.path.basename(d)
        if "." not in name or not name.rsplit(".", 1)[1].isdigit():
            continue
        place, rep = name.rsplit(".", 1)
        try:
            s = json.load(open(f))
        except (OSError, ValueError):
            continue
        t = [r["time_us"] for r in s.get("results", []) if r.get("op") == op]
        if not t:
            continue
        cpu = []
        for k in ("cpu_before.txt", "cpu_after.txt"):
            try:
                cpu.append(float(open(os.path.join(d, k)).read().split()[0]))
            except (OSError, ValueError, IndexError):
                pass
        clocks = ""
        if os.path.exists(os.path.join(d, "clocks.txt")):
            clocks = " | ".join(open(os.path.join(d, "clocks.txt")).read().split("\n")).strip(" |")
        out.append((place, int(rep), statistics.median(t), statistics.mean(cpu) if cpu else None,
                    nccl_lines(os.path.join(d, "app.log")), clocks))
    return sorted(out, key=lambda x: (x[0], x[1]))


def nccl_lines(log):
    """NCCL's INFO lines of one run, without what differs in every run
    anyway (host, pid, thread, addresses, numbers with a fraction)."""
    out = set()
    try:
        text = open(log, errors="replace").read().splitlines()
    except OSError:
        return out
    for ln in text:
        if "NCCL INFO" not in ln:
            continue
        ln = ln[ln.index("NCCL INFO"):]
        ln = re.sub(r"0x[0-9a-fA-F]+", "0x", ln)
        ln = re.sub(r"\b\d+\.\d+\b", "N.N", ln)
        ln = re.sub(r"\b(pid|Pid|PID|tid)\s*\d+", r"\1 N", ln)
        out.add(ln)
    return out


def pearson(x, y):
    if len(x) < 3:
        return None
    mx, my = statistics.mean(x), statistics.mean(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else None


def main():
    if len(sys.argv) < 2:
        print("usage: " + next(ln.strip() for ln in __doc__.splitlines() if "RUN_OUT [OP]" in ln))
        return 2
    op = sys.argv[2] if len(sys.argv) > 2 else "allreduce"
    rs = runs(sys.argv[1], op)
    if not rs:
        print("run_spread.py: no run with %s results under %s" % (op, sys.argv[1]))
        return 1
    meds = [r[2] for r in rs]
    lo, hi = min(meds), max(meds)
    two = hi > 1.2 * lo
    cut = (lo + hi) / 2
    print("# %d runs, %s: median us per call over the sweep's sizes, %.2f to %.2f (slowest %.2fx the fastest)"
          % (len(rs), op, lo, hi, hi / lo))
    for p, rep, m, cpu, _, clocks in rs:
        print("%-10s %3d %8.2f us%s%s%s" % (p, rep, m, ("  fast" if m < cut else "  slow") if two else "",
                                          "  cpu loop %.1f ms" % cpu if cpu is not None else "",
                                          "  gpu: " + clocks if clocks else ""))
    if not two:
        print("placement: one population (the slowest run within 1.2x the fastest): no fast and slow runs to tell apart")
    else:
        print("placement: fast runs (median under %.2f us) per placement:" % cut)
        for p in sorted({r[0] for r in rs}):
            mine = [r for r in rs if r[0] == p]
            print("  %-10s %d of %d" % (p, sum(1 for r in mine if r[2] < cut), len(mine)))
        fast = [r[4] for r in rs if r[2] < cut]
        slow = [r[4] for r in rs if r[2] >= cut]
        if any(fast) and any(slow):
            only_f = set.intersection(*fast) - set.union(*slow)
            only_s = set.intersection(*slow) - set.union(*fast)
            print("NCCL: %d log lines in every fast run and in no slow one, %d the other way round"
                  % (len(only_f), len(only_s)))
            for tag, ls in (("fast", only_f), ("slow", only_s)):
                for ln in sorted(ls)[:20]:
                    print("  %s only: %s" % (tag, ln))
        else:
            print("NCCL: no INFO lines in the logs (run with NCCL_LOG=1)")
    cpu = [(r[2], r[3]) for r in rs if r[3] is not None]
    if cpu:
        c = [b for _, b in cpu]
        r = pearson([a for a, _ in cpu], c)
        print("CPU: the fixed loop took %.1f-%.1f ms (%.2fx); Pearson r(run median, loop ms) = %s over %d runs"
              % (min(c), max(c), max(c) / min(c) if min(c) > 0 else 0, "%.2f" % r if r is not None else "n/a",
                 len(cpu)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
