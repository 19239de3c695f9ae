#!/usr/bin/env python3
"""host_sample_check.py — host sampling (COLLPROF_HOST_SAMPLE, src/call_modes.h)
against the same replay with every call timed.

  host_sample_check.py REF_DIR SAMPLED_DIR N     rank files (*.jsonl) of each
  host_sample_check.py --summary REF_DIR SAMPLED_DIR   summary.json of each

Prints "ok - ..." / "FAIL - ..." lines (test/tap.sh tap_from_checker).
Rank files: per path, calls, bytes, states and GPU samples equal the
reference's (counts stay exact, GPU sampling is untouched); the events
recorded plus those only counted equal the reference's events recorded;
untimed_calls <= calls; every Coll/P2p path has a timed event; times are
estimates consistent with the timed events (min <= total/calls <= max, 0
when none is timed); the trace holds each path's timed events and at
most its calls; with N >= 2 the GroupApi calls timed per process are
about calls/N: at least floor(calls/N) - 1 and at most calls/N + 1 plus
one per path (a new path times the next call); no bad calls.
"""
import glob, json, os, sys

FAILS = 0


def check(cond, what):
    global FAILS
    print(("ok - " if cond else "FAIL - ") + what)
    if not cond:
        FAILS += 1
    return cond


def rank_file(d):
    """{path: record}, rank record, {path id: trace events} of the one file."""
    files = sorted(glob.glob(os.path.join(d, "*.jsonl")))
    if len(files) != 1:
        return None, None, None
    paths, rank, ev = {}, None, {}
    for line in open(files[0]):
        r = json.loads(line)
        t = r.get("recordType")
        if t == "path":
            paths[r["path"]] = r
        elif t == "rank":
            rank = r
        elif t == "event" and r.get("type") != "ProfilerLifecycle":
            ev[r.get("path")] = ev.get(r.get("path"), 0) + 1
    return paths, rank, ev


def ranks(ref, smp, n):
    rp, rr, _ = rank_file(ref)
    sp, sr, sev = rank_file(smp)
    name = os.path.basename(smp)
    if not check(rp is not None and sp is not None and rr and sr, "%s: one rank file each, with its rank record" % name):
        return
    check(sorted(rp) == sorted(sp), "%s: the same %d paths as every call timed" % (name, len(rp)))
    for key in ("calls", "bytes", "states", "gpu_samples"):
        bad = [p for p in rp if p in sp and rp[p].get(key, 0) != sp[p].get(key, 0)]
        check(not bad, "%s: %s per path = every call timed%s" % (name, key, "" if not bad else
              " (differ: %s)" % "; ".join("%s %s/%s" % (p, rp[p].get(key), sp[p].get(key, 0)) for p in bad[:3])))
    check(sr.get("eventsRecorded", 0) + sr.get("eventsCounted", -1) == rr.get("eventsRecorded"),
          "%s: events recorded %s + counted %s = %s recorded with every call timed" %
          (name, sr.get("eventsRecorded"), sr.get("eventsCounted"), rr.get("eventsRecorded")))
    check(sr.get("badCalls") == 0 and rr.get("badCalls") == 0, "%s: no bad calls (%s)" % (name, sr.get("badCalls")))
    bad_u, bad_t, bad_e, bad_tr, untimed = [], [], [], [], 0
    for p, r in sp.items():
        calls, u = r["calls"], r.get("untimed_calls", 0)
        untimed += u
        timed = calls - u
        if u > calls:
            bad_u.append(p)
        if r["leafType"] in ("ncclProfileColl", "ncclProfileP2p") and timed < 1:
            bad_t.append(p)
        if timed == 0:
            ok_est = r["total_ns"] == 0 and r["min_ns"] == 0 and r["max_ns"] == 0
        else:
            mean = r["total_ns"] / calls
            ok_est = r["min_ns"] <= mean + 1 and mean <= r["max_ns"] + 1
        if not ok_est:
            bad_e.append(p)
        traced = sev.get(r["local"], 0)
        if not (timed <= traced <= calls):
            bad_tr.append("%s %d<=%d<=%d" % (p, timed, traced, calls))
    check(not bad_u, "%s: untimed_calls <= calls on every path" % name)
    check(not bad_t, "%s: every Coll/P2p path has a timed event%s" % (name, "" if not bad_t else " (not: %s)" % bad_t))
    check(not bad_e, "%s: estimated times between the timed events' min and max per call (0 when none timed)%s" %
          (name, "" if not bad_e else " (not: %s)" % bad_e[:3]))
    check(not bad_tr, "%s: trace events per path between its timed events and its calls%s" %
          (name, "" if not bad_tr else " (not: %s)" % bad_tr[:3]))
    g = sp.get("GroupApi")
    if n >= 2 and g:
        calls, timed = g["calls"], g["calls"] - g.get("untimed_calls", 0)
        lo, hi = calls // n - 1, calls / n + 1 + len(sp)
        check(lo <= timed <= hi, "%s: GroupApi calls timed %d of %d, within [%d, %.1f] for 1 in %d" %
              (name, timed, calls, lo, hi, n))
        check(untimed > 0, "%s: some calls only counted (%d untimed events)" % (name, untimed))
    elif n == 1:
        check(untimed == 0 and sr.get("eventsCounted") == 0, "%s: N = 1: nothing untimed" % name)


def summaries(ref, smp):
    a = json.load(open(os.path.join(ref, "summary.json")))
    b = json.load(open(os.path.join(smp, "summary.json")))
    pa = {p["path"]: p for p in a["paths"]}
    pb = {p["path"]: p for p in b["paths"]}
    name = os.path.basename(smp)
    check(sorted(pa) == sorted(pb), "%s: summary.json has the same paths" % name)
    bad = [p for p in pa if p in pb and (pa[p]["calls"], pa[p].get("bytes")) != (pb[p]["calls"], pb[p].get("bytes"))]
    check(not bad, "%s: summary.json calls and bytes per path = every call timed%s" % (name, "" if not bad else " (%s)" % bad[:3]))
    est = [p for p in pb.values() if p.get("untimed_calls")]
    check(est and all(p.get("times_estimated") is True and p["untimed_calls"] <= p["calls"] for p in est),
          "%s: summary.json: %d paths with untimed_calls, each times_estimated" % (name, len(est)))
    check(not any("untimed_calls" in p or "times_estimated" in p for p in pa.values()),
          "%s: the reference has no untimed_calls" % os.path.basename(ref))
    log = open(os.path.join(smp, "summary.log")).read()
    # events only counted: the rank records' eventsCounted summed, and with
    # the recorded ones every event the reference recorded (lean calls off)
    counted = 0
    for f in glob.glob(os.path.join(smp, "*.jsonl")):
        for line in open(f):
            if '"recordType":"rank"' in line:
                counted += json.loads(line).get("eventsCounted", 0)
    check(counted > 0 and b.get("events_counted") == counted,
          "%s: summary.json events_counted %s = the rank records' eventsCounted %d" %
          (name, b.get("events_counted"), counted))
    check(a.get("events_counted") == 0, "%s: the reference's events_counted is 0" % os.path.basename(ref))
    check(b["events_recorded"] + b.get("events_counted", -1) == a["events_recorded"],
          "%s: events recorded + counted = the reference's recorded (%d + %s = %d)" %
          (name, b["events_recorded"], b.get("events_counted"), a["events_recorded"]))
    want = "  Events counted only:          %d (host sampling" % counted
    check(want in log, "%s: summary.log has the events counted only (%r)" % (name, want))
    check("Events counted only" not in open(os.path.join(ref, "summary.log")).read(),
          "%s: the reference's summary.log has no such line" % os.path.basename(ref))
    check("Host times sampled (COLLPROF_HOST_SAMPLE)" in log, "%s: summary.log says the times are sampled" % name)
    check("Host times sampled" not in open(os.path.join(ref, "summary.log")).read(),
          "%s: the reference's summary.log does not" % os.path.basename(ref))


if __name__ == "__main__":
    if sys.argv[1] == "--summary":
        summaries(sys.argv[2], sys.argv[3])
    else:
        ranks(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    sys.exit(1 if FAILS else 0)
