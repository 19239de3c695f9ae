#!/usr/bin/env python3
"""capture_lint.py — find the callbacks NCCL made on events that were not
live, in capture files (COLLPROF_CAPTURE=1, shared/fixtures format).

A handle is live from the start that returned it to its first stop.
collprof reuses handles, so a handle is judged by the callbacks between
one start that returned it and the next: a second stop there, or a state
after the stop, is NCCL calling on an event it already stopped (collprof
counts those as bad calls; this shows which events they were).

  test/gpu/capture_lint.py CAPTURE.jsonl...     exit 1 when any was found
"""
import json
import sys

TYPES = {1: "Group", 2: "Coll", 4: "P2p", 8: "ProxyOp", 16: "ProxyStep", 32: "ProxyCtrl",
         64: "KernelCh", 128: "NetPlugin", 256: "GroupApi", 512: "CollApi", 1024: "P2pApi",
         2048: "KernelLaunch"}


def lint(path):
    live, last_start, stopped_by, found = {}, {}, {}, []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            cb, h = r.get("cb"), r.get("h")
            if cb == "start" and h and h != "(nil)":
                live[h] = True
                last_start[h] = (n, r)
                stopped_by.pop(h, None)
            elif cb in ("stop", "state") and h in last_start:
                if not live.get(h):
                    found.append((n, cb, r, last_start[h], stopped_by.get(h)))
                elif cb == "stop":
                    live[h] = False
                    stopped_by[h] = (n, r)
    for n, cb, r, (sn, s), prev in found:
        kind = "stop of a stopped event" if cb == "stop" else "state %s on a stopped event" % r.get("state")
        print("%s:%d: %s: %s (tid %s); started line %d (tid %s, parent %s), first stopped line %s (tid %s)" % (
            path, n, kind, TYPES.get(s.get("type"), s.get("type")), r.get("tid"), sn, s.get("tid"),
            s.get("parent"), prev[0] if prev else "?", prev[1].get("tid") if prev else "?"))
    return len(found)


def main():
    total = sum(lint(p) for p in sys.argv[1:])
    print("capture_lint: %d callback(s) on events already stopped in %d file(s)" % (total, len(sys.argv) - 1))
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
