#!/usr/bin/env python3
"""launch_timer_oracle.py — what the launch timer (src/launch_timer.h) must
report for a capture replayed with COLLPROF_LAUNCH_SAMPLE=N.

  launch_timer_oracle.py CAPTURE.jsonl N [SLOTS_FREE_NEVER]

Per thread of the capture, in callback order: KernelLaunch starts (type
2048) are counted; the first and every N-th are timed.  A timed launch
takes the Coll/P2p (type 2/4) that start on its thread until the thread's
next GroupApi (256) start or next KernelLaunch start (then it is split:
several launches share the group's work).  Exactly one Coll/P2p and not
split: attributed to that op; else counted unattributed.  First launches
of a thread are not in the per-path numbers.

Prints one JSON object: {"timed", "unattributed", "ops": {"Type:func":
periodic attributed launches}}.  With SLOTS_FREE_NEVER (events never
complete: FAKECUDA_READY_MS huge), at most 64 launches get a slot and the
rest are skipped: {"recorded", "skipped"}.
"""
import json
import sys

TYPES = {2: "Coll", 4: "P2p"}


def main():
    n = int(sys.argv[2])
    never = len(sys.argv) > 3
    per_tid = {}   # tid -> {"count", "open": dict or None}
    done = []
    for line in open(sys.argv[1]):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("cb") != "start":
            continue
        t = per_tid.setdefault(r.get("tid"), {"count": 0, "open": None})
        ty = r.get("type")
        if ty == 256 or ty == 2048:
            if t["open"] is not None:
                if ty == 2048:
                    t["open"]["split"] = True
                done.append(t["open"])
                t["open"] = None
        if ty == 2048 and n > 0:
            c = t["count"]
            t["count"] += 1
            if c % n == 0:
                t["open"] = {"first": c == 0, "ops": [], "split": False}
        elif ty in TYPES and t["open"] is not None:
            t["open"]["ops"].append("%s:%s" % (TYPES[ty], r.get("func", "")))
    done += [t["open"] for t in per_tid.values() if t["open"] is not None]
    if never:
        print(json.dumps({"recorded": min(len(done), 64), "skipped": max(len(done) - 64, 0)}))
        return
    ops, unattr = {}, 0
    for d in done:
        if len(d["ops"]) != 1 or d["split"]:
            unattr += 1
        elif not d["first"]:
            ops[d["ops"][0]] = ops.get(d["ops"][0], 0) + 1
    print(json.dumps({"timed": len(done), "unattributed": unattr, "ops": dict(sorted(ops.items()))},
                     sort_keys=True))


if __name__ == "__main__":
    main()
