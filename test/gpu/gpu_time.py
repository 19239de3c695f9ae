#!/usr/bin/env python3
"""gpu_time.py — collprof's sampled GPU time per call against the app's
CUDA-event time per call, per op and size (test/gpu/overhead.sh and
run.sh call it).

  gpu_time.py [--shown] SWEEP.json RANKFILE.jsonl [MIN_BYTES]

From the trace in RANKFILE (event records): each Coll's GPU span = latest
KernelCh gpuStop - earliest gpuStart of the KernelCh records whose
parentObj is that Coll's eventAddr (the Coll with that address that started
last before the KernelCh).  Spans are grouped by op and nccl-tests size
(Coll bytes x nranks for AllGather / ReduceScatter) and their mean is set
beside SWEEP's time_us for the same op and size (Colls whose sample the
plugin drops by its slot-reuse rule are left out here too).  Sizes >= MIN_BYTES
(default 1 MiB) must agree within 20%, judged on the median span (the mean
is shown too: when the host runs far ahead of the GPU, NCCL's KernelCh
timestamps of late-read channels can belong to other kernels, and a few
such spans dominate a mean).  Each call path's first sampled call is left
out: a first-call sample, whose kernel holds set-up (see below).  Exit 1
if one does not.  --shown: a step its caller does not judge (run.sh's gs
and gp): the summary line says "shown" where it would say "judged".

With gpuLaunch records (src/launch_timer.h) a second table sets timed
kernel launches beside the same CUDA-event times (a run of k launches,
COLLPROF_LAUNCH_RUN, is one sample of its span over k) and is the one judged:
launches timed on an idle stream are counted but not used (collprof keeps
them out of a path's numbers: they hold the host's launch latency), and a
size with only such launches is judged on its KernelCh spans.

SWEEP from `collprof-gpu-app --gpu-bound` (sweep.json "gpuBound"): the
timed calls were queued behind a spinning kernel, so the CUDA-event time is
the GPU's, not the rate at which the host issued the calls; a size whose
calls took the host longer to issue than the spin lasted is marked
"not GPU-bound" (its CUDA-event time may still include host gaps).
"""
import bisect
import json
import statistics
import sys

DT = {"ncclInt8": 1, "ncclChar": 1, "ncclUint8": 1, "ncclInt32": 4, "ncclInt": 4,
      "ncclUint32": 4, "ncclInt64": 8, "ncclUint64": 8, "ncclFloat16": 2, "ncclHalf": 2,
      "ncclFloat32": 4, "ncclFloat": 4, "ncclFloat64": 8, "ncclDouble": 8, "ncclBfloat16": 2}
OP = {"AllReduce": "allreduce", "AllGather": "allgather", "ReduceScatter": "reducescatter",
      "Broadcast": "broadcast", "Reduce": "reduce"}


def main():
    shown = "--shown" in sys.argv[1:]
    args = [a for a in sys.argv[1:] if a != "--shown"]
    if len(args) < 2:
        sys.exit(__doc__)
    sweep = json.load(open(args[0]))
    minb = int(args[2]) if len(args) > 2 else 1 << 20
    n = sweep["nranks"]
    colls = {}   # eventAddr -> sorted list of (start ts, record)
    kcs = []
    launches = {}   # (op, nccl-tests bytes) -> [GPU us of timed launches, stream busy]
    idle = {}       # (op, nccl-tests bytes) -> launches timed on an idle stream
    for line in open(args[1]):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("recordType") == "gpuLaunch":
            op = OP.get(r.get("func"))
            if op and r.get("type") == "ncclProfileColl" and not r.get("first") and r.get("eventAddr"):
                b = int(r.get("bytes", 0)) * (n if op in ("allgather", "reducescatter") else 1)
                k = int(r.get("launches", 1)) or 1   # a run (COLLPROF_LAUNCH_RUN): its span over k
                if r.get("idle"):
                    idle[(op, b)] = idle.get((op, b), 0) + k
                else:
                    launches.setdefault((op, b), []).append(float(r["gpuDuration"]) / k)
            continue
        if r.get("recordType") != "event":
            continue
        t = r.get("type")
        if t == "ncclProfileColl":
            colls.setdefault(r.get("eventAddr"), []).append((r["start"]["ts"], r))
        elif t == "ncclProfileKernelCh":
            kcs.append(r)
    for a in list(colls):
        v = sorted(colls[a], key=lambda x: x[0])
        colls[a] = ([x[0] for x in v], [x[1] for x in v])
    span = {}    # id(coll record) -> [min start, max stop, coll record]
    unmatched = 0
    for k in kcs:
        lst = colls.get(k.get("parentObj"))
        d = k.get("details", {})
        if not lst or "gpuStart" not in d or "gpuStop" not in d:
            unmatched += 1
            continue
        i = bisect.bisect_right(lst[0], k["start"]["ts"]) - 1
        # the host runs at most a few ms ahead of the GPU: a Coll that
        # started long before is an earlier holder of a reused handle
        if i < 0 or k["start"]["ts"] - lst[0][i] > 50000:
            unmatched += 1
            continue
        c = lst[1][i]
        s = span.setdefault(id(c), [d["gpuStart"], d["gpuStop"], c, 0, 0])
        s[0] = min(s[0], d["gpuStart"])
        s[1] = max(s[1], d["gpuStop"])
        s[3] += 1
        s[4] = max(s[4], k["stop"]["ts"])    # its latest KernelCh stop (host)
    # each call path's first sampled Coll (left out below), found before the
    # slot-reuse rule drops any
    firsts = {}
    for k in sorted(span, key=lambda k: span[k][2]["start"]["ts"]):
        firsts.setdefault(span[k][2].get("path", span[k][2].get("func")), k)
    # The plugin's slot-reuse rule (src/parent_link.h, CP_KC_SLOT_TRUST): a
    # Coll's sample does not count once 32 or more Colls of KernelCh-on calls
    # (here: Colls with a KernelCh record) started on its communicator after
    # it, before one of its KernelCh stopped; NCCL's 64 timestamp slots per
    # channel may have been reused by then.  (The plugin reads that count as
    # published once in 8 starts, so it drops some at 25-31 too, which are
    # kept here: a few more samples than the summary's.)
    on_starts = {}
    for v in span.values():
        on_starts.setdefault(v[2].get("commId"), []).append(v[2]["start"]["ts"])
    for v in on_starts.values():
        v.sort()
    dropped = 0
    for key in list(span):
        c, last_stop = span[key][2], span[key][4]
        st = on_starts.get(c.get("commId"), [])
        if bisect.bisect_left(st, last_stop) - bisect.bisect_right(st, c["start"]["ts"]) >= 32:
            dropped += 1
            del span[key]
    # A call path's first sampled call is a first-call sample
    # (src/gpu_sample_rule.c, "First-call samples": call 0, the sample a new
    # path forces at the next call, the start delay's first, a window's
    # first; periodic ones come later), and its kernel holds set-up and
    # the wait for a peer that is not there yet: on 2 H200s (run.sh's gt
    # step) the first sampled 1 MiB all-reduce's kernel took 1.3 and 7.6 ms
    # in two runs, later ones about 10 us (the 1.3 ms one's channels'
    # starts within 0.1 us of each other, their stops within 4 us: one
    # long kernel, not a mix-up), and the 1 MiB sizes holding another
    # collective's first sample 1.7-3.4 times their CUDA-event time.  The summary counts first-call samples
    # once, apart from the calls they would stand for (gpu_first_ns); they
    # are left out here likewise.  The trace does not mark them: a path's
    # first sampled Coll stands for them (a forced sample lands on the
    # next call, in a loop the same path's).
    first_left = 0
    for k in firsts.values():
        if k in span:
            del span[k]
            first_left += 1
    groups = {}
    partial = 0
    for lo, hi, c, nkc, _ in span.values():
        d = c.get("details", {})
        if d.get("channels") and nkc != d["channels"]:
            partial += 1     # not one KernelCh per channel: a mixed-up match
            continue
        op = OP.get(d.get("func", c.get("func")))
        if not op:
            continue
        b = int(d.get("count", 0)) * DT.get(d.get("datatype"), 1)
        if op in ("allgather", "reducescatter"):
            b *= n
        groups.setdefault((op, b), []).append((hi - lo) / 1000.0)
    if sweep.get("gpuBound"):
        print("# CUDA events: calls queued behind a spinning kernel (collprof-gpu-app --gpu-bound)")
    else:
        print("# CUDA events: around a back-to-back loop (host-bound where calls are short)")
    print("# %-14s %10s %8s %12s %12s %12s %8s" % ("op", "bytes", "samples", "mean_us",
                                                  "median_us", "cudaevent_us", "ratio"))
    bad = 0
    checked = 0
    for r in sweep["results"]:
        key = (r["op"], r["bytes"])
        if key not in groups:
            continue
        v = groups[key]
        mean = sum(v) / len(v)
        med = statistics.median(v)
        ratio = med / r["time_us"] if r["time_us"] > 0 else 0
        flag = ""
        if r.get("issue_us", 0) > r.get("spin_us", 0) > 0:
            flag = "  not GPU-bound (issued in %.0f us, spin %.0f us)" % (r["issue_us"], r["spin_us"])
        if r["bytes"] >= minb:
            checked += 1
            if abs(ratio - 1) > 0.20:
                bad += 1
                flag = "  > 20%" + flag
        print("  %-14s %10d %8d %12.2f %12.2f %12.2f %8.3f%s" % (r["op"], r["bytes"], len(v), mean,
                                                                 med, r["time_us"], ratio, flag))
    print("# KernelCh records without a Coll: %d; Colls without one KernelCh per channel "
          "(left out): %d; dropped by the slot-reuse rule: %d; first-call samples (each call "
          "path's first, left out): %d; sizes >= %d compared: %d, outside 20%%: %d"
          % (unmatched, partial, dropped, first_left, minb, checked, bad))
    if not launches and not idle:
        sys.exit(1 if bad or checked == 0 else 0)
    # Timed kernel launches (src/launch_timer.h): CUDA events on the launch
    # stream, as the app's own events.  Those timed on an idle stream (the
    # GPU waited for the host's launch) are counted, not used: collprof
    # leaves them out of a path's numbers too, and a size that has only
    # such launches is judged on its KernelCh spans, which collprof then
    # reports.  What collprof reports is judged.
    print("# timed kernel launches (gpuLaunch records: CUDA events around the launch; idle: on an idle "
          "stream, not used)")
    print("# %-14s %10s %8s %6s %12s %12s %12s %8s" % ("op", "bytes", "samples", "idle", "mean_us",
                                                       "median_us", "cudaevent_us", "ratio"))
    lbad = lchecked = kc_only = 0
    for r in sweep["results"]:
        key = (r["op"], r["bytes"])
        v = launches.get(key)
        if not v and not idle.get(key):
            continue
        flag = ""
        if v:
            med = statistics.median(v)
            mean = sum(v) / len(v)
        elif key in groups:
            med, mean = statistics.median(groups[key]), sum(groups[key]) / len(groups[key])
            flag = "  (KernelCh spans: only idle launches)"
            kc_only += r["bytes"] >= minb
        else:
            print("  %-14s %10d %8d %6d   only idle launches, no KernelCh span" % (
                r["op"], r["bytes"], 0, idle.get(key, 0)))
            continue
        ratio = med / r["time_us"] if r["time_us"] > 0 else 0
        if r["bytes"] >= minb:
            lchecked += 1
            if abs(ratio - 1) > 0.20:
                lbad += 1
                flag = "  > 20%" + flag
        print("  %-14s %10d %8d %6d %12.2f %12.2f %12.2f %8.3f%s" % (
            r["op"], r["bytes"], len(v or []), idle.get(key, 0), mean, med, r["time_us"], ratio, flag))
    print("# timed launches: sizes >= %d compared: %d (%d of them on KernelCh spans, having only idle "
          "launches), outside 20%%: %d (%s); launches on an idle stream: %d; KernelCh spans: %d of %d "
          "outside (shown)" % (minb, lchecked, kc_only, lbad, "shown" if shown else "judged", sum(idle.values()),
                               bad, checked))
    sys.exit(1 if lbad or lchecked == 0 else 0)


if __name__ == "__main__":
    main()
