#!/usr/bin/env python3
"""cost_sample_check.py — the in-situ cost of collprof's callbacks
(src/cost_sample.c) as the rank records and the summary report it.

  cost_sample_check.py always DIR LOG...   every callback timed: costCallbacks
      equals the start, stop and state callbacks each replay LOG says it made,
      one window as long as the run, costNs = costTimedNs > 0
  cost_sample_check.py off DIR             COLLPROF_COST_SAMPLE_MS=0: nothing timed
  cost_sample_check.py windows DIR LOG...  windows: at least one, fewer
      callbacks timed than made, window time below the span, and costNs =
      costTimedNs x (costSpanNs - costSlowNs) / (costWindowNs - costSlowNs);
      no dense phase (costDenseSpanNs 0)
  cost_sample_check.py dense DIR LOG...    the same with the dense phase ended:
      costDenseNs is that rule on the costDense* fields, costNs - costDenseNs
      on the rest (the totals less the dense ones); by its time rule (a
      second after the first window that timed a callback: 1 to 1.5 s)
  cost_sample_check.py dense-events DIR LOG...  the same, ended by the events
      made (100,000) before its time rule could (under a second)
  cost_sample_check.py summary DIR         summary.json's overhead_ns is the ranks'
      costNs summed (all timed in situ), cost_callbacks theirs, and summary.log
      says so
  cost_sample_check.py fallback DIR        no window: overhead_ns is the ranks'
      eventsRecorded x perEventCostNs rounded, plus their costSetupNs
  cost_sample_check.py borrowed DIR        rank 0 timed in situ, the others not:
      overhead_ns is rank 0's costNs, plus the others' events (recorded and
      counted) x rank 0's (costNs - costSetupNs) per event, plus their
      costSetupNs; summary.json and summary.log name the borrowed cost
summary, fallback and borrowed: summary.json's overhead_share is overhead_ns over ranks x
runtime_ns, and summary.log's "Overhead share [%]" line says it.
Every mode with a rank record: costSetupNs (one-off set-ups timed whole,
src/oneoff.h) > 0 (the replay makes a thread's block and ring at least) and,
where an estimate exists, inside costNs.

Prints "ok - ..." / "FAIL - ..." lines (test/tap.sh tap_from_checker).
"""
import glob, json, os, re, sys

FAILS = 0


def check(cond, what):
    global FAILS
    print(("ok - " if cond else "FAIL - ") + what)
    if not cond:
        FAILS += 1


def ranks(d):
    out = []
    for f in sorted(glob.glob(os.path.join(d, "*.jsonl"))):
        for line in open(f):
            if '"recordType":"rank"' in line:
                out.append(json.loads(line))
    return out


def made(logs):
    n = 0
    for log in logs:
        m = re.search(r"callbacks \d+ \(start, stop, state: (\d+)\)", open(log).read())
        n += int(m.group(1)) if m else -10**9
    return n


def share_ok(d, s, nranks):
    want = s["overhead_ns"] / (nranks * s["runtime_ns"])
    check(abs(s["overhead_share"] - want) <= 1e-5 * max(want, 1e-9) + 1e-12,
          "%s: overhead_share %s = overhead_ns / (%d ranks x runtime_ns) (%.6g)" %
          (os.path.basename(d), s["overhead_share"], nranks, want))
    log = open(os.path.join(d, "summary.log")).read()
    line = "Overhead share [%%]:           %.3f (the overhead over %d rank%s x the longest run time)" % (
        100 * want, nranks, "" if nranks == 1 else "s")
    check(line in log, "%s: summary.log: %r" % (os.path.basename(d), line))


def main():
    mode, d = sys.argv[1], sys.argv[2]
    name = os.path.basename(d)
    rs = ranks(d)
    check(len(rs) >= 1, "%s: %d rank records" % (name, len(rs)))
    check(all(r["costSetupNs"] > 0 for r in rs), "%s: one-off set-ups timed whole: %s ns" %
          (name, [r["costSetupNs"] for r in rs]))
    if mode == "fallback":
        s = json.load(open(os.path.join(d, "summary.json")))
        want = sum(round(r["eventsRecorded"] * r["perEventCostNs"]) + r["costSetupNs"] for r in rs)
        check(s["overhead_insitu_ranks"] == 0 and abs(s["overhead_ns"] - want) <= len(rs),
              "%s: overhead_ns %s = events x per-event cost + set-ups (%d)" % (name, s["overhead_ns"], want))
        check(s["cost_setup_ns"] == sum(r["costSetupNs"] for r in rs), "%s: cost_setup_ns %s = the ranks'" %
              (name, s["cost_setup_ns"]))
        share_ok(d, s, len(rs))
        log = open(os.path.join(d, "summary.log")).read()
        check(re.search(r"\(recorded events x per-event cost, all ranks.*; one-off set-ups timed whole: %.6f\)" %
                        (s["cost_setup_ns"] / 1e9), log) is not None, "%s: summary.log names the set-ups" % name)
        return
    if mode == "borrowed":
        s = json.load(open(os.path.join(d, "summary.json")))
        timed = [r for r in rs if r.get("costCallbacks", 0) > 0]
        rest = [r for r in rs if r.get("costCallbacks", 0) == 0]
        check(len(timed) == 1 and len(rest) == len(rs) - 1 and rest, "%s: one rank timed in situ, %d not" %
              (name, len(rest)))
        if not timed or not rest:
            return
        t = timed[0]
        per = (t["costNs"] - t["costSetupNs"]) / (t["eventsRecorded"] + t.get("eventsCounted", 0))
        ev = sum(r["eventsRecorded"] + r.get("eventsCounted", 0) for r in rest)
        want = t["costNs"] + round(per * ev) + sum(r["costSetupNs"] for r in rest)
        check(s["overhead_insitu_ranks"] == 1 and abs(s["overhead_ns"] - want) <= 1,
              "%s: overhead_ns %s = rank 0's costNs + the others' %d events x %.1f ns + their set-ups (%d)" %
              (name, s["overhead_ns"], ev, per, want))
        check(s["overhead_borrowed_ranks"] == len(rest) and abs(s["overhead_borrowed_ns_per_event"] - per) <= 0.06,
              "%s: summary.json: %s ranks borrowed %s ns per event" %
              (name, s["overhead_borrowed_ranks"], s["overhead_borrowed_ns_per_event"]))
        share_ok(d, s, len(rs))
        log = open(os.path.join(d, "summary.log")).read()
        line = "the others: their events x those ranks' cost per event, %.1f ns" % per
        check(line in log, "%s: summary.log: %r" % (name, line))
        return
    if mode == "summary":
        s = json.load(open(os.path.join(d, "summary.json")))
        ns = sum(r["costNs"] for r in rs)
        cb = sum(r["costCallbacks"] for r in rs)
        check(s["overhead_insitu_ranks"] == len(rs), "%s: overhead_insitu_ranks %s = %d ranks" %
              (name, s["overhead_insitu_ranks"], len(rs)))
        check(s["overhead_ns"] == ns, "%s: overhead_ns %s = the ranks' costNs summed (%d)" % (name, s["overhead_ns"], ns))
        check(s["cost_callbacks"] == cb, "%s: cost_callbacks %s = the ranks' (%d)" % (name, s["cost_callbacks"], cb))
        share_ok(d, s, len(rs))
        log = open(os.path.join(d, "summary.log")).read()
        want = "%.6f +- 0.000000 (collprof's callbacks timed where NCCL made them: %d in %d windows" % (
            ns / 1e9, cb, sum(r["costWindows"] for r in rs))
        check(want in log, "%s: summary.log's overhead line: %r" % (name, want))
        check(s["overhead_err_ns"] == 0 and s["overhead_err_unknown_ranks"] == 0,
              "%s: every callback timed: no error (%s, %s)" % (name, s["overhead_err_ns"], s["overhead_err_unknown_ranks"]))
        return
    n = made(sys.argv[3:]) if len(sys.argv) > 3 else None
    for r in rs:
        who = "%s rank %s" % (name, r.get("rank"))
        if mode == "off":
            check(r["costWindows"] == 0 and r["costCallbacks"] == 0 and r["costNs"] == 0 and r["costErrNs"] == -1,
                  "%s: no window, nothing timed, no error (%d, %d, %d, %d)" %
                  (who, r["costWindows"], r["costCallbacks"], r["costNs"], r["costErrNs"]))
        elif mode == "always":
            check(r["costWindows"] == 1 and r["costWindowNs"] == r["costSpanNs"] > 0 and r["costSlowNs"] == 0,
                  "%s: one window as long as the run (%d ns of %d)" % (who, r["costWindowNs"], r["costSpanNs"]))
            check(r["costNs"] == r["costTimedNs"] + r["costSetupNs"] and r["costTimedNs"] > 0 and r["costErrNs"] == 0,
                  "%s: costNs %d = costTimedNs %d > 0 + costSetupNs %d, no error (%d)" %
                  (who, r["costNs"], r["costTimedNs"], r["costSetupNs"], r["costErrNs"]))
        else:
            w, sp, t, sl = r["costWindowNs"], r["costSpanNs"], r["costTimedNs"], r["costSlowNs"]
            check(r["costWindows"] >= 1 and 0 < w < sp and 0 <= sl < w,
                  "%s: %d windows, %d ns of %d, %d ns of them the timing's own" % (who, r["costWindows"], w, sp, sl))
            rule = lambda t, sp, w, sl: int(t * (sp - sl) / (w - sl) + 0.5) if w > sl else 0
            dsp = r["costDenseSpanNs"]
            setup = r["costSetupNs"]
            if mode == "windows":
                exp = rule(t, sp, w, sl)
                check(dsp == 0 and r["costDenseNs"] == 0, "%s: no dense phase (span %d)" % (who, dsp))
                check(abs(r["costNs"] - setup - exp) <= 1 + exp // 10**9,
                      "%s: costNs %d = timed x (span - slow) / (window - slow) (%d) + set-ups (%d)" %
                      (who, r["costNs"], exp, setup))
            else:
                dw, dt, dsl, dn = r["costDenseWindowNs"], r["costDenseTimedNs"], r["costDenseSlowNs"], r["costDenseWindows"]
                if mode == "dense":
                    check(1e9 <= dsp < 1.5e9, "%s: the dense phase ended by its time rule: %.3f s" % (who, dsp / 1e9))
                else:
                    check(0 < dsp < 1e9 and r["eventsRecorded"] + r["eventsCounted"] >= 100000,
                          "%s: the dense phase ended by the events made: %.3f s, %d events in the run" %
                          (who, dsp / 1e9, r["eventsRecorded"] + r["eventsCounted"]))
                check(0 < dsp < sp and 0 < dn < r["costWindows"] and 0 < dw < w and 0 < dt <= t and
                      0 < r["costDenseCallbacks"] < r["costCallbacks"] and dsl <= sl,
                      "%s: a dense phase of %.3f s of %.3f, %d windows of %d, %d callbacks timed of %d" %
                      (who, dsp / 1e9, sp / 1e9, dn, r["costWindows"], r["costDenseCallbacks"], r["costCallbacks"]))
                # the dense phase: windows DENSE_DIV (4) times as often as later
                # (judged over the time rule's second: the events' may be a few windows)
                check(mode != "dense" or dn / dsp > 2 * (r["costWindows"] - dn) / (sp - dsp),
                      "%s: the dense phase's windows come more often: %.0f/s against %.0f/s" %
                      (who, dn / dsp * 1e9, (r["costWindows"] - dn) / (sp - dsp) * 1e9))
                e1 = rule(dt, dsp, dw, dsl)
                e2 = rule(t - dt, sp - dsp, w - dw, sl - dsl)
                check(abs(r["costDenseNs"] - e1) <= 1 + e1 // 10**9,
                      "%s: costDenseNs %d = the rule on the dense phase (%d)" % (who, r["costDenseNs"], e1))
                check(abs(r["costNs"] - r["costDenseNs"] - setup - e2) <= 1 + e2 // 10**9,
                      "%s: costNs - costDenseNs - set-ups %d = the rule on the rest (%d)" %
                      (who, r["costNs"] - r["costDenseNs"] - setup, e2))
            check(r["costWindows"] < 2 or 0 < r["costErrNs"] < 10 * max(1, r["costNs"]),
                  "%s: a standard error from the windows' spread: %d ns of %d" % (who, r["costErrNs"], r["costNs"]))
    if mode in ("always", "windows", "dense", "dense-events") and n is not None:
        cb = sum(r["costCallbacks"] for r in rs)
        if mode == "always":
            check(cb == n, "%s: costCallbacks %d = the start, stop and state callbacks made (%d)" % (name, cb, n))
        else:
            check(0 < cb < n, "%s: costCallbacks %d, some of the %d made" % (name, cb, n))


main()
sys.exit(1 if FAILS else 0)
