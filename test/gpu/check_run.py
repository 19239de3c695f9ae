#!/usr/bin/env python3
"""check_run.py — check collprof's output of a collprof-gpu-app run against
the app's own counts (test/gpu/run.sh calls it; independent of collprof's
code: it reads only the JSON files).

  check_run.py APPDIR PROFDIR
  check_run.py --counters PROFDIR    only the run-counter checks (last four
                                     below): any collprof MPI run, e.g. the
                                     CPU replay runs of test/mpi_collate.t

APPDIR holds counts.<world rank>.json from the app, PROFDIR collprof's
rank<R>.jsonl files and summary.json.  Checks, each printed as ok/not ok:
  - every line of every rank file parses as JSON, and each has its rank record;
  - per rank and in summary.json: calls of CollApi:<F> / P2pApi:<F> paths =
    the app's calls of F; per rank, calls and bytes of Coll:<F> / P2p:<F>
    paths = the calls NCCL ran (eager + graph replays, the replays only when
    NCCL reports them: not when the rank record's maskFrozen says the
    mask froze with KernelCh off, at the capture or before it; whether a captured call itself gives a Coll
    event is reported, either is accepted, but one rule must hold for all
    funcs and for all ranks whose mask froze alike: a rank whose capture
    happened on a GPU-sampled call froze with KernelCh on, and NCCL then
    reports the capture and every replay); in summary.json the sum of the
    ranks' Coll/P2p calls and bytes;
  - Coll/P2p paths have GPU time (gpu_ns > 0, gpu_samples > 0) and the rank
    record counts sampled calls -- unless a second calling thread froze the
    mask with KernelCh off before any sample (src/start_delay.c, "Start
    delay": threads that start together freeze so), when there is no
    KernelCh GPU time to check;
  - every rank record (the last "rank" line of its file) has gpuSampledCalls,
    gpuSamplesDropped, gpuSamplesDeferred, gpuSampleGateResets, traceDropped
    and badCalls as non-negative integers and maskFrozen as a string ("" =
    did not freeze);
  - summary.json's gpu_sampled_calls, gpu_samples_dropped,
    gpu_samples_deferred, trace_dropped and bad_calls = the sums of those
    over the rank records;
  - summary.json's mask_frozen: one entry per distinct non-empty maskFrozen,
    nranks = the ranks listed, and those ranks = exactly the ranks whose
    rank record gives that reason;
  - with gpuSample >= 2 (1 call in N sampled; default 16): per rank
    gpuSamplesDropped <= 10% of gpuSampledCalls (one sample in flight at a
    time should make drops rare when a rank has cores to spare) -- unless
    the mask froze with KernelCh on (a second calling thread): every call
    is sampled from then on, as with N = 1, and the slot-reuse rule drops
    whatever the proxy reads late (8-19% of all-reduce spans seen with
    N = 1 on 4 ranks; 7% and 13% in two runs of the two-thread phase).
  - the rank records' gpuLaunches* counters are non-negative integers and
    summary.json's gpu_launches_* their sums; with LAUNCH_ALL=1 in the
    environment (the run had COLLPROF_LAUNCH_SAMPLE=1 and
    COLLPROF_LAUNCH_INTERVAL_US=0: every kernel launch wanted), per rank:
    some launches timed, none left unread, and at least as many skipped as
    the app made calls while capturing a CUDA graph (each its own group, so
    its own launch, on a stream being captured: an event recorded there
    would become a node of the app's graph, and the app's graph phase would
    fail or replay it).
Exit status 1 if a check fails.
"""
import glob
import json
import os
import re
import sys

FAILS = 0
N = 0


def check(cond, what):
    global FAILS, N
    N += 1
    print(("ok %d - " if cond else "not ok %d - ") % N + what)
    if not cond:
        FAILS += 1
    return cond


# rank record counters and their summary.json totals (None: no total)
RANK_COUNTERS = {"gpuSampledCalls": "gpu_sampled_calls",
                 "gpuSamplesDropped": "gpu_samples_dropped",
                 "gpuSamplesDeferred": "gpu_samples_deferred",
                 "gpuSampleGateResets": None,
                 "traceDropped": "trace_dropped",   # trace records lost to full rings: counted, never silent
                 "badCalls": "bad_calls",            # NCCL calls collprof ignored (double stops, ...)
                 "gpuLaunchesTimed": "gpu_launches_timed",   # src/launch_timer.h
                 "gpuLaunchesUnattributed": "gpu_launches_unattributed",
                 "gpuLaunchesSkipped": "gpu_launches_skipped",
                 "gpuLaunchesUnread": "gpu_launches_unread",
                 "gpuLaunchesIdle": "gpu_launches_idle"}
MAX_DROP = 0.10


def is_count(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def rank_counters(wr, rk):
    """The GPU-sampling fields of one rank record."""
    for key in RANK_COUNTERS:
        check(is_count(rk.get(key)), "rank %s: %s %s is a non-negative integer" %
              (wr, key, json.dumps(rk[key]) if key in rk else "(missing)"))
    check(isinstance(rk.get("maskFrozen"), str), "rank %s: maskFrozen %s is a string" %
          (wr, json.dumps(rk.get("maskFrozen"))))
    calls, drop = rk.get("gpuSampledCalls"), rk.get("gpuSamplesDropped")
    every = rk.get("gpuSample")
    what = ("rank %s: GPU samples dropped %s of %s sampled calls (%s) <= %d%% "
            "(gpuSample %s; skipped %s, gate resets %s)" %
            (wr, drop, calls,
             "%.2f%%" % (100.0 * drop / calls) if is_count(drop) and is_count(calls) and calls
             else "n/a", 100 * MAX_DROP, every, rk.get("gpuSamplesDeferred"),
             rk.get("gpuSampleGateResets")))
    if not isinstance(every, int) or every < 2:
        check(True, what + " # SKIP not 1 call in N >= 2")
        return
    if "KernelCh on" in str(rk.get("maskFrozen", "")):
        check(True, what + " # SKIP mask frozen with KernelCh on: every call sampled, as N = 1")
        return
    check(is_count(drop) and is_count(calls) and drop <= MAX_DROP * calls, what)


def launch_all(wr, rk, counts):
    """Every launch wanted: the captured ones skipped, the rest read."""
    captured = sum(k.get("captured", 0) for k in counts.values())
    timed, skipped, unread = (rk.get("gpuLaunchesTimed"), rk.get("gpuLaunchesSkipped"),
                              rk.get("gpuLaunchesUnread"))
    check(is_count(timed) and timed > 0, "rank %s: every launch wanted: %s timed > 0" % (wr, timed))
    check(unread == 0, "rank %s: every launch wanted: none unread at finalize (%s)" % (wr, unread))
    check(is_count(skipped) and skipped >= captured,
          "rank %s: launches skipped %s >= the app's calls while capturing a graph %d" %
          (wr, skipped, captured))


def summary_counters(s, recs):
    """summary.json's sampling totals and mask_frozen against the rank
    records ({world rank: record})."""
    for rk_key, sk in RANK_COUNTERS.items():
        if not sk:
            continue
        want = sum(r.get(rk_key) for r in recs.values() if is_count(r.get(rk_key)))
        check(s.get(sk) == want, "summary.json: %s %s = sum of rank records' %s %d" %
              (sk, json.dumps(s.get(sk)), rk_key, want))
    frozen = {}
    for wr, r in sorted(recs.items()):
        if r.get("maskFrozen"):
            frozen.setdefault(r["maskFrozen"], []).append(wr)
    groups = s.get("mask_frozen")
    if not check(isinstance(groups, list), "summary.json: mask_frozen is a list (%d entries; "
                 "rank records give %d reasons)" % (len(groups) if isinstance(groups, list) else -1,
                                                    len(frozen))):
        return
    seen = set()
    for g in groups:
        reason, n, ranks = g.get("reason"), g.get("nranks"), g.get("ranks")
        ranks = ranks if isinstance(ranks, list) else []
        check(is_count(n) and n == len(ranks), "summary.json: mask_frozen %s: nranks %s = %d "
              "ranks listed" % (json.dumps(reason), json.dumps(n), len(ranks)))
        want = frozen.get(reason, [])
        check(sorted(ranks) == want and len(set(ranks)) == len(ranks),
              "summary.json: mask_frozen %s: ranks %s = rank records with that maskFrozen %s" %
              (json.dumps(reason), ranks, want))
        seen.add(reason)
    missing = sorted(set(frozen) - seen)
    check(not missing and len(seen) == len(groups),
          "summary.json: mask_frozen has each reason once and all the rank records' reasons%s" %
          ("" if not missing else " (missing: %s)" % "; ".join(missing)))


def app_counts(appdir):
    """{world_rank: {func: dict of summed counters}} over threads and comms."""
    out = {}
    for f in glob.glob(os.path.join(appdir, "counts.*.json")):
        d = json.load(open(f))
        per = {}
        for t in d["threads"]:
            for c in t["comms"]:
                for fn, k in c["funcs"].items():
                    s = per.setdefault(fn, {})
                    for key, v in k.items():
                        s[key] = s.get(key, 0) + v
        out[d["worldRank"]] = per
    return out


def leaf(p):
    return p.get("leafType", ""), p.get("leafFunc", "")


def sums(paths, ltype, func):
    calls = sum(p.get("calls", 0) for p in paths if leaf(p) == (ltype, func))
    byts = sum(p.get("bytes", 0) for p in paths if leaf(p) == (ltype, func))
    gpu = sum(p.get("gpu_ns", 0) for p in paths if leaf(p) == (ltype, func))
    smp = sum(p.get("gpu_samples", 0) for p in paths if leaf(p) == (ltype, func))
    return calls, byts, gpu, smp


def api_calls(label, paths, fn, k):
    """Check the CollApi/P2pApi calls of func fn against the app's; return
    the type of fn's Coll/P2p paths."""
    p2p = fn in ("Send", "Recv")
    api_t = "ncclProfileP2pApi" if p2p else "ncclProfileCollApi"
    calls, _, _, _ = sums(paths, api_t, fn)
    check(calls == k["api"], "%s: %s %s calls %d = app's calls %d" % (label, api_t[11:], fn, calls, k["api"]))
    return "ncclProfileP2p" if p2p else "ncclProfileColl"


def compare(label, paths, counts, rules, replays_seen=True, state="not frozen", kc_time=True):
    """Check one set of path records against summed app counts.  Graph
    replays count only when NCCL reports them: with KernelCh off at the
    capture (collprof froze the mask so: rank record maskFrozen) NCCL 2.28
    runs no host callback for a replay and sends no Coll/P2p event.  Whether
    the capture itself gives an event depends on that mask too, so the rule
    seen is kept per mask state (rules: {state: set of rules}).  Returns
    {func: (calls, bytes)} of the Coll/P2p paths as found."""
    seen = {}
    for fn, k in sorted(counts.items()):
        op_t = api_calls(label, paths, fn, k)
        calls, byts, gpu, smp = sums(paths, op_t, fn)
        seen[fn] = (calls, byts)
        if replays_seen:
            a = (k["eager"] + k["replayed"], k["eagerBytes"] + k["replayedBytes"])
        else:
            a = (k["eager"], k["eagerBytes"])
        b = (a[0] + k["captured"], a[1] + k["capturedBytes"])
        r = rules.setdefault(state, set())
        if (calls, byts) == a:
            r.add("captured calls give no Coll/P2p event" if k["captured"] else "-")
        elif (calls, byts) == b:
            r.add("captured calls give a Coll/P2p event at capture" if k["captured"] else "-")
        check((calls, byts) in (a, b),
              "%s: %s %s calls %d bytes %d = app's %s calls %d bytes %d%s" %
              (label, op_t[11:], fn, calls, byts, "run" if replays_seen else "eager",
               a[0], a[1],
               " (or %d / %d with the captured ones)" % b if k["captured"] else ""))
        what = "%s: %s %s has GPU time (%d ns from %d samples)" % (label, op_t[11:], fn, gpu, smp)
        if kc_time:
            check(gpu > 0 and smp > 0, what)
        else:
            check(True, what + " # SKIP " + NO_KC)
    return seen


NO_KC = "mask frozen with KernelCh off by a second thread before any sample"


def no_kc_rank(rk):
    """A rank whose second calling thread froze the mask with KernelCh off
    before any call was sampled: it has no KernelCh GPU time at all."""
    frozen = rk.get("maskFrozen") or ""
    return "second" in frozen and "thread" in frozen and "KernelCh off" in frozen and \
        rk.get("gpuSampledCalls") == 0


def compare_summary(paths, counts, per_rank, kc_time=True):
    """summary.json against the app's calls (API paths) and against the sum
    of what each rank's own paths gave (Coll/P2p: ranks may differ in
    whether graph replays give events, by the mask each froze with)."""
    for fn, k in sorted(counts.items()):
        op_t = api_calls("summary.json", paths, fn, k)
        calls, byts, gpu, smp = sums(paths, op_t, fn)
        want = (sum(r.get(fn, (0, 0))[0] for r in per_rank), sum(r.get(fn, (0, 0))[1] for r in per_rank))
        check((calls, byts) == want, "summary.json: %s %s calls %d bytes %d = sum over the rank files "
              "%d / %d" % (op_t[11:], fn, calls, byts, want[0], want[1]))
        what = "summary.json: %s %s has GPU time (%d ns from %d samples)" % (op_t[11:], fn, gpu, smp)
        if kc_time:
            check(gpu > 0 and smp > 0, what)
        else:
            check(True, what + " # SKIP every rank's " + NO_KC)


def main():
    only_counters = len(sys.argv) == 3 and sys.argv[1] == "--counters"
    if len(sys.argv) != 3:
        sys.exit("usage: check_run.py APPDIR PROFDIR | check_run.py --counters PROFDIR")
    appdir, profdir = sys.argv[1], sys.argv[2]
    files = sorted(glob.glob(os.path.join(profdir, "rank*.jsonl")))
    if only_counters:
        counts = {}
        check(len(files) > 0, "rank files in %s (%d)" % (profdir, len(files)))
    else:
        counts = app_counts(appdir)
        check(len(counts) > 0, "app wrote counts (%d ranks)" % len(counts))
        check(len(files) == len(counts), "one rank file per rank (%d files, %d ranks)" %
              (len(files), len(counts)))
    rules = {}
    total = {}
    recs_by_rank = {}
    per_rank = []
    for f in files:
        bad = 0
        recs = []
        for line in open(f):
            try:
                recs.append(json.loads(line))
            except ValueError:
                bad += 1
        check(bad == 0, "%s: all %d lines parse" % (os.path.basename(f), len(recs) + bad))
        ranks = [r for r in recs if r.get("recordType") == "rank"]
        check(len(ranks) == 1, "%s: one rank record (%d)" % (os.path.basename(f), len(ranks)))
        if not ranks:
            continue
        rk = ranks[-1]
        wr = rk.get("rank")
        if not isinstance(wr, int) or wr < 0:    # no world rank: the file's number
            m = re.search(r"rank(\d+)\.jsonl$", f)
            wr = int(m.group(1)) if m else wr
        check(wr not in recs_by_rank, "%s: rank %s not seen in another file" %
              (os.path.basename(f), wr))
        recs_by_rank[wr] = rk
        rank_counters(wr, rk)
        if only_counters:
            continue
        if os.environ.get("LAUNCH_ALL") == "1":
            launch_all(wr, rk, counts.get(wr, {}))
        what = "rank %s: gpuSampledCalls %s > 0" % (wr, rk.get("gpuSampledCalls"))
        if no_kc_rank(rk):
            check(True, what + " # SKIP " + NO_KC)
        else:
            check(rk.get("gpuSampledCalls", 0) > 0, what)
        frozen = rk.get("maskFrozen") or ""
        # KernelCh off at a graph's capture hides its replays, whatever froze
        # the mask so (a capture, or a second thread: the start delay's case)
        hidden = "KernelCh off" in frozen
        state = ("KernelCh off" if "KernelCh off" in frozen else
                 "KernelCh on" if "KernelCh on" in frozen else "not frozen")
        if frozen:
            print("# rank %s: mask frozen (%s)%s" % (wr, frozen,
                  ": graph replays give no event, not counted" if hidden else ""))
        # (paths first seen after MPI_Finalize began carry no numbers)
        paths = [r for r in recs if r.get("recordType") == "path" and not r.get("afterFinalize")]
        # the tail may hold local then global path records: keep the last per local id
        last = {}
        for p in paths:
            last[p.get("local")] = p
        paths = list(last.values())
        if wr in counts:
            per_rank.append(compare("rank %d" % wr, paths, counts[wr], rules, not hidden, state,
                                    not no_kc_rank(rk)))
            for fn, k in counts[wr].items():
                s = total.setdefault(fn, {})
                for key, v in k.items():
                    s[key] = s.get(key, 0) + v
        else:
            check(False, "%s: rank %s has app counts" % (f, wr))
    sj = os.path.join(profdir, "summary.json")
    if check(os.path.exists(sj), "summary.json exists"):
        s = json.load(open(sj))
        summary_counters(s, recs_by_rank)
        if not only_counters:
            kc_time = not recs_by_rank or not all(no_kc_rank(rk) for rk in recs_by_rank.values())
            compare_summary(s.get("paths", []), total, per_rank, kc_time)
            what = "summary.json: gpu_sampled_calls %s > 0" % s.get("gpu_sampled_calls")
            if kc_time:
                check(s.get("gpu_sampled_calls", 0) > 0, what)
            else:
                check(True, what + " # SKIP every rank's " + NO_KC)
    if not only_counters:
        for state, r in sorted(rules.items()):
            r.discard("-")
            check(len(r) <= 1, "one rule for captured calls with the mask %s: %s" %
                  (state, ", ".join(sorted(r)) or "n/a"))
    print("# %d checks, %d failed" % (N, FAILS))
    sys.exit(1 if FAILS else 0)


if __name__ == "__main__":
    main()
