#!/usr/bin/env python3
"""launch_timer_oracle.py — what the launch timer (src/launch_timer.h) must
report for a capture replayed with COLLPROF_LAUNCH_SAMPLE=N.

  launch_timer_oracle.py CAPTURE.jsonl N [never] [run=K] [gap0] [idle] [min=B]

Per thread of the capture, in callback order: KernelLaunch starts (type
2048) of calls of B bytes or more (min=B: COLLPROF_LAUNCH_MIN_BYTES;
here 0, any size, when not given, as launch_timer.t's replays set it: a call is its GroupApi start and what follows until
the next, its size that of its largest CollApi/P2pApi, count x datatype
size, one of unknown size counting as large) are counted; the first and
every N-th are timed; the launches of smaller calls are neither timed nor
counted, but still join or end an open run as any launch does.  A timed launch
takes the Coll/P2p (type 2/4) that start on its thread until the thread's
next GroupApi (256) start or next KernelLaunch start (then it is split:
several launches share the group's work).  Exactly one Coll/P2p and not
split: attributed to that op; else counted unattributed.  First launches
of a thread are not in the per-path numbers.

run=K (COLLPROF_LAUNCH_RUN): a timed launch other than the thread's first
opens a run of min(K, N) launches: at the next GroupApi start the run goes
on when the launch just ended took exactly one Coll/P2p of the run's op
and size (count x datatype) (else it is dropped before its stop: its launches counted skipped), and
the next KernelLaunch start joins it when it is on the same stream (else
dropped).  A second launch in one group ends the run there (split, read).
Work between the calls (a Coll/P2p, a GroupApi start before the next
launch) drops it, as does the end of the capture before it is full.
The thread's next run (after its first launch, which is left out) is twice as long as this one after a clean one (up
to K), half as long after one that was mixed, split or dropped (the fake
driver's streams are busy unless idle is given); after the f-th such run
of 2 or more in a row (f at most 6), 2^f clean single launches come before
a run of 2 is tried again, and a clean run of 2 or more sets f back to 0.
idle: FAKECUDA_IDLE=1, every launch and run idle (so runs only shrink;
none is in the per-op numbers).
gap0: COLLPROF_LAUNCH_RUN_GAP_US=0, every run dropped at its first gap.
The replay is far faster than the default gap would allow to matter only
where the test sets a large one.

Prints one JSON object: {"timed", "unattributed", "skipped", "records",
"ops": {"Type:func": periodic attributed launches}} (records: gpuLaunch
trace records, one per read run).  With never (events never complete:
FAKECUDA_READY_MS huge), at most 64 launches get a slot and the rest are
skipped: {"recorded", "skipped"}.
"""
import json
import sys

from gpu_sampling_oracle import nbytes

TYPES = {2: "Coll", 4: "P2p"}


def main():
    n = int(sys.argv[2])
    opts = sys.argv[3:]
    never = "never" in opts
    run = 1
    for o in opts:
        if o.startswith("run="):
            run = int(o[4:])
    minb = 0
    for o in opts:
        if o.startswith("min="):
            minb = int(o[4:])
    gap0 = "gap0" in opts
    idle = "idle" in opts
    per_tid = {}   # tid -> {"count", "open": dict or None}
    done = []
    skipped = 0

    def adapt(t, clean):
        if t["open"]["first"]:
            return
        w = t["open"]["want"]
        if clean:
            if w >= 2:
                t["fails"] = 0
            if w == 1 and t["hold"]:
                t["hold"] -= 1
                k = 1
            else:
                k = w * 2
        else:
            k = w // 2
            if w >= 2:
                t["fails"] = min(t["fails"] + 1, 6)
                t["hold"] = 1 << t["fails"]
        t["k"] = max(1, min(run, k))

    def drop(t):
        nonlocal skipped
        adapt(t, False)
        skipped += t["open"]["n"]
        t["open"] = None

    def close(t):
        """The open run's launch has ended (GroupApi start): read, go on, or drop."""
        o = t["open"]
        if o["between"]:
            drop(t)
            return
        if len(o["cur"]) != 1 or o["cur"][0] != o.get("first_op"):
            o["mixed"] = True
        if o["stopped"] or o["n"] >= o["want"]:
            adapt(t, o["stopped"] and not o["mixed"] and not o["split"] and o["n"] == o["want"] and not idle)
            done.append(o)
            t["open"] = None
        elif o["mixed"] or gap0:
            drop(t)
        else:
            o["between"] = True

    for line in open(sys.argv[1]):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        t = per_tid.setdefault(r.get("tid"), {"count": 0, "open": None, "k": run, "fails": 0, "hold": 0,
                                              "big": minb == 0})
        ty = r.get("type")
        if r.get("cb") == "stop":
            o = t["open"]
            if o and o.get("launch") == r.get("h") and not o["between"] and o["n"] >= o["want"]:
                o["stopped"] = True
            continue
        if r.get("cb") != "start":
            continue
        if ty == 256:
            t["big"] = minb == 0
            if t["open"] is not None:
                close(t)
        if ty in (512, 1024) and (nbytes(r) >= minb or nbytes(r) == 0):
            t["big"] = True
        if ty == 2048 and n > 0:
            o = t["open"]
            if o is not None:
                if o["between"] and r.get("stream") == o["stream"]:
                    o.update(between=False, n=o["n"] + 1, cur=[], launch=r.get("h"))
                    t["count"] += 1
                    continue
                if o["between"]:
                    drop(t)
                else:
                    o["split"] = o["stopped"] = True
                    adapt(t, False)
                    done.append(o)
                    t["open"] = None
            if not t["big"]:
                continue
            c = t["count"]
            t["count"] += 1
            if c % n == 0:
                t["open"] = {"first": c == 0, "ops": [], "cur": [], "split": False, "mixed": False,
                             "n": 1, "want": 1 if c == 0 else min(t["k"], n), "stopped": False,
                             "between": False, "stream": r.get("stream"), "launch": r.get("h")}
        elif ty in TYPES and t["open"] is not None:
            o = t["open"]
            op = "%s:%s" % (TYPES[ty], r.get("func", ""))
            if o["between"]:
                o["mixed"] = True
            else:
                o["ops"].append(op)
                o["cur"].append((op, r.get("count"), r.get("datatype")))
                o.setdefault("first_op", o["cur"][0])
    for t in per_tid.values():
        if t["open"] is not None:
            o = t["open"]
            if o["between"] or (not o["stopped"] and o["n"] < o["want"]):
                drop(t)   # finalize: a run cut short
            else:
                if len(o["cur"]) != 1 or o["cur"][0] != o.get("first_op"):
                    o["mixed"] = True
                done.append(o)
    if never:
        rec = sum(d["n"] for d in done)
        print(json.dumps({"recorded": min(rec, 64), "skipped": max(rec - 64, 0) + skipped}))
        return
    ops, unattr, timed = {}, 0, 0
    for d in done:
        timed += d["n"]
        if len(d["ops"]) != d["n"] or d["split"] or d["mixed"]:
            unattr += d["n"]
        elif not d["first"] and not idle:
            ops[d["ops"][0]] = ops.get(d["ops"][0], 0) + d["n"]
    out = {"timed": timed, "unattributed": unattr, "skipped": skipped, "records": len(done),
           "ops": dict(sorted(ops.items()))}
    if idle:
        out["idle"] = timed
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
