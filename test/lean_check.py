#!/usr/bin/env python3
"""lean_check.py — a replay with lean calls (COLLPROF_LEAN=1) against the
same capture replayed with every call timed (the reference): what lean
calls must keep and what they may estimate (src/mask_control.c, "Lean
calls"; src/snapshot.c, scale_unseen).

  lean_check.py REF_DIR LEAN_DIR NAME [--some-lean] [--tol F] [--gpu]

Checked, one "ok - ..." or "FAIL - ..." line each:
  - the API and Coll/P2p paths (GroupApi, CollApi, P2pApi, Coll, P2p) and
    ProxyCtrl have exactly the reference's calls and bytes, and no
    unseen_calls;
  - KernelCh paths have the reference's calls (GPU samples are taken in
    calls that are never lean);
  - every other path's calls are those seen plus unseen_calls, within
    --tol (default 0.35) of the reference's, and unseen_calls <=
    untimed_calls;
  - with --some-lean: some path has unseen_calls (lean calls happened).
REF_DIR and LEAN_DIR may also name one rank file each.  --gpu: two real
runs (test/gpu/run.sh), not replays of one capture: KernelCh (GPU
sampling takes its samples by time) and ProxyCtrl (the proxy thread's
sleeps) differ from run to run and are not compared.

  lean_check.py --seeds REF_DIR SEED1_DIR NAME SEED_DIR...

Lean runs of one capture with COLLPROF_SAMPLE_SEED=1..K (SEED1_DIR a
second run with seed 1): the seed-1 runs have the same counts (calls,
bytes, unseen and untimed calls) on every path; the
estimated paths' calls are not the same for every seed (the seed draws);
and each estimated path's mean over the seeds is within 10% of the
reference's calls, and every single seed's within 25% (the estimate's
bias and spread: src/lean_estimate.h).

  lean_check.py --ranks DIR NAME

An MPI run with COLLPROF_SAMPLE_SEED and a fixed COLLPROF_HOST_SAMPLE:
every rank's trace holds the Coll events of the same calls (by seq), and
some calls were left out (not every call recorded).

  lean_check.py --summary REF_DIR LEAN_DIR NAME

The same on summary.json (collated, offline or by the MPI tree): exact
calls and bytes of the exact types, every path with unseen_calls marked
calls_estimated, and summary.log's "Lean calls" line (absent from the
reference's).
"""
import glob
import json
import re
import sys

EXACT = ("GroupApi", "CollApi", "P2pApi", "Coll", "P2p", "ProxyCtrl")


def load(d):
    r = {}
    for f in ([d] if d.endswith(".jsonl") else glob.glob(d + "/*.jsonl")):
        for line in open(f):
            if '"recordType":"path"' in line:
                o = json.loads(line)
                r[o["path"]] = o
    return r


def leaf(p):
    return p.rsplit("/", 1)[-1].split(":")[0]


def summaries(ref_d, lean_d, name):
    a = json.load(open(ref_d + "/summary.json"))
    b = json.load(open(lean_d + "/summary.json"))
    pa = {p["path"]: p for p in a["paths"]}
    pb = {p["path"]: p for p in b["paths"]}
    bad = [p for p in pa if leaf(p) in EXACT and
           (pa[p]["calls"], pa[p].get("bytes")) != (pb.get(p, {}).get("calls"), pb.get(p, {}).get("bytes"))]
    print(("ok" if pa and not bad else "FAIL") +
          " - %s: summary.json: API, Coll/P2p and ProxyCtrl calls and bytes exact%s" % (name, "" if not bad else " %s" % bad[:3]))
    est = [p for p in pb.values() if p.get("unseen_calls")]
    print(("ok" if est and all(p.get("calls_estimated") is True and leaf(p["path"]) not in EXACT for p in est) else "FAIL") +
          " - %s: summary.json: %d paths with unseen_calls, each calls_estimated" % (name, len(est)))
    log = open(lean_d + "/summary.log").read()
    ok = "Lean calls (COLLPROF_LEAN)" in log and "Lean calls" not in open(ref_d + "/summary.log").read()
    print(("ok" if ok else "FAIL") + " - %s: summary.log says which calls are estimated (the reference does not)" % name)
    marked = len(re.findall(r"^ +~\d+ \|", log, re.M))
    print(("ok" if marked == len(est) else "FAIL") +
          " - %s: summary.log marks the estimated calls with ~ (%d rows, %d paths)" % (name, marked, len(est)))


def seeds(ref_d, again_d, name, *dirs):
    ref, runs = load(ref_d), [load(d) for d in dirs]
    def counts(r):
        return {p: tuple(o.get(k) for k in ("calls", "bytes", "unseen_calls", "untimed_calls")) for p, o in r.items()}
    same = counts(load(again_d)) == counts(runs[0]) and bool(runs[0])
    print(("ok" if same else "FAIL") + " - %s: the same seed gives the same counts on every path" % name)
    est = sorted(p for p in runs[0] if runs[0][p].get("unseen_calls"))
    varied = [p for p in est if len({r.get(p, {}).get("calls") for r in runs}) > 1]
    print(("ok" if varied else "FAIL") +
          " - %s: other seeds draw other calls (%d of %d estimated paths vary)" % (name, len(varied), len(est)))
    bad, worst, far, farthest = [], [], [], []
    for p in sorted(set(ref) - set(p for p in ref if leaf(p) in EXACT or leaf(p) == "KernelCh")):
        calls = [r.get(p, {}).get("calls", 0) for r in runs]
        mean, ca = sum(calls) / len(calls), ref[p].get("calls", 0)
        worst.append((abs(mean - ca) / max(ca, 1), p, mean, ca, min(calls), max(calls)))
        if abs(mean - ca) > 0.10 * max(ca, 1):
            bad.append("%s: mean %.1f against %s" % (p, mean, ca))
        dev = max(abs(c - ca) for c in calls) / max(ca, 1)
        farthest.append((dev, p, min(calls), max(calls), ca))
        if dev > 0.25:
            far.append("%s: single seeds %d-%d against %s" % (p, min(calls), max(calls), ca))
    worst.sort(reverse=True)
    farthest.sort(reverse=True)
    w = worst[0] if worst else (0, "-", 0, 0, 0, 0)
    print(("ok" if worst and not bad else "FAIL") +
          " - %s: estimated calls' mean over %d seeds within 10%% of the reference "
          "(farthest %s: %.1f against %d)" % (name, len(runs), leaf(w[1]), w[2], w[3]))
    f = farthest[0] if farthest else (0, "-", 0, 0, 0)
    print(("ok" if farthest and not far else "FAIL") +
          " - %s: every single seed's estimate within 25%% of the reference "
          "(farthest %s: %d-%d against %d)" % (name, leaf(f[1]), f[2], f[3], f[4]))
    for x in (bad + far)[:10]:
        print("  " + x)


def ranks(d, name):
    seqs = {}
    for f in sorted(glob.glob(d + "/*.jsonl")):
        for line in open(f):
            if '"type":"ncclProfileColl"' in line and '"recordType":"event"' in line:
                o = json.loads(line)
                seqs.setdefault(f, set()).add(o["details"]["seq"])
    sets = list(seqs.values())
    same = len(sets) >= 2 and all(x == sets[0] for x in sets)
    top = max(sets[0]) + 1 if sets and sets[0] else 0
    print(("ok" if same else "FAIL") + " - %s: every rank traced the Coll of the same calls (%s)" %
          (name, ", ".join("%d calls" % len(x) for x in sets)))
    print(("ok" if sets and 0 < len(sets[0]) < top else "FAIL") +
          " - %s: some calls only counted (%d of seq 0-%d traced)" % (name, len(sets[0]) if sets else 0, top - 1))


def main():
    args = sys.argv[1:]
    if args and args[0] == "--seeds":
        seeds(*args[1:])
        return
    if args and args[0] == "--ranks":
        ranks(*args[1:3])
        return
    if args and args[0] == "--summary":
        summaries(*args[1:4])
        return
    some = "--some-lean" in args
    gpu = "--gpu" in args
    tol = 0.35
    if "--tol" in args:
        tol = float(args[args.index("--tol") + 1])
    ref_d, lean_d, name = [a for a in args if not a.startswith("--") and a != str(tol)][:3]
    ref, lean = load(ref_d), load(lean_d)
    if not ref or not lean:
        print("FAIL - %s: path records in both runs (%d, %d)" % (name, len(ref), len(lean)))
        return
    bad_exact, bad_est, bad_kc = [], [], []
    unseen_any = 0
    for p in sorted(set(ref) | set(lean)):
        a, b = ref.get(p, {}), lean.get(p, {})
        ca, cb = a.get("calls", 0), b.get("calls", 0)
        un = b.get("unseen_calls", 0)
        unseen_any += un
        lf = leaf(p)
        if gpu and lf in ("KernelCh", "ProxyCtrl"):
            continue
        if lf in EXACT:
            if ca != cb or a.get("bytes", 0) != b.get("bytes", 0) or un:
                bad_exact.append("%s: %s/%s calls, %s/%s bytes, %s unseen" %
                                 (p, ca, cb, a.get("bytes"), b.get("bytes"), un))
        elif lf == "KernelCh":
            if ca != cb:
                bad_kc.append("%s: %s/%s" % (p, ca, cb))
        else:
            if un > b.get("untimed_calls", 0) or abs(cb - ca) > tol * max(ca, 1):
                bad_est.append("%s: %s against %s (%s unseen)" % (p, cb, ca, un))
    print(("ok" if not bad_exact else "FAIL") +
          " - %s: API, Coll/P2p%s calls and bytes exact under lean calls" % (name, "" if gpu else " and ProxyCtrl"))
    for x in bad_exact[:10]:
        print("  " + x)
    if not gpu:
        print(("ok" if not bad_kc else "FAIL") + " - %s: KernelCh samples as in the reference" % name)
    for x in bad_kc[:10]:
        print("  " + x)
    print(("ok" if not bad_est else "FAIL") +
          " - %s: estimated calls within %.0f%% of the reference" % (name, 100 * tol))
    for x in bad_est[:10]:
        print("  " + x)
    if some:
        print(("ok" if unseen_any else "FAIL") + " - %s: lean calls happened (%d calls unseen)" % (name, unseen_any))


main()
