#!/usr/bin/env python3
"""lean_mix.py -- a capture of a loop of mixed sizes, built from a real one.

    lean_mix.py CAPTURE OUT COUNT[,COUNT...] REPEATS

Takes from CAPTURE (one process's file of shared/fixtures) the first call
of each element COUNT given -- its GroupApi and everything under it, with
the Group NCCL sent alongside -- and writes OUT: the capture's init, then
the calls in turn, COUNT after COUNT, REPEATS times, then its fini.  Each
copy gets handles of its own, times moved on past the previous copy (host
and GPU clocks by the same amount) and the next sequence number.

A training loop mixes sizes in every step, and the calls of different
sizes bring different numbers of proxy events (ar_net: 4 ProxySteps for
8 B, 16 for 1 MiB).  The capture of nccl-tests runs a sweep instead, each
size once or a few times: this makes the loop the lean estimate has to
get right (test/lean.t).
"""
import json
import sys

GROUPAPI, GROUP, COLL, PROXYCTRL = 256, 1, 2, 32


def calls_of(recs):
    """[(coll count, [line indexes])] per GroupApi call, in file order."""
    starts = {}                    # handle -> start record
    kids = {}
    roots = []                     # (line index, handle) of GroupApi roots
    for i, r in enumerate(recs):
        if r["cb"] != "start":
            continue
        starts[r["h"]] = r
        kids.setdefault(r["parent"], []).append(r["h"])
        if r["type"] == GROUPAPI and r["parent"] == "(nil)":
            roots.append((i, r["h"]))
    bounds = [i for i, _ in roots] + [len(recs)]
    out = []
    for n, (i0, h) in enumerate(roots):
        mine, todo = set(), [h]
        while todo:
            x = todo.pop()
            mine.add(x)
            todo += kids.get(x, [])
        # the Group NCCL sends next to the call (a root of its own)
        for j in range(i0, bounds[n + 1]):
            r = recs[j]
            if r["cb"] == "start" and r["type"] == GROUP and r["parent"] == "(nil)":
                mine.add(r["h"])
        colls = [starts[x] for x in mine if starts[x]["type"] == COLL]
        if len(colls) != 1:
            continue
        lines = [j for j, r in enumerate(recs) if r["cb"] in ("start", "state", "stop") and r["h"] in mine]
        out.append((colls[0]["count"], lines))
    return out


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    src, dst, counts, reps = sys.argv[1], sys.argv[2], [int(c) for c in sys.argv[3].split(",")], int(sys.argv[4])
    recs = [json.loads(l) for l in open(src)]
    init = [r for r in recs if r["cb"] == "init"]
    fini = [r for r in recs if r["cb"] == "fini"]
    if len(init) != 1:
        sys.exit("lean_mix.py: %s: one communicator expected" % src)
    by_count = {}
    for c, lines in calls_of(recs):
        by_count.setdefault(c, lines)
    missing = [c for c in counts if c not in by_count]
    if missing:
        sys.exit("lean_mix.py: %s: no call of count %s" % (src, missing))
    cursor = init[0]["t"] + 1000
    seq = 0
    with open(dst, "w") as f:
        f.write(json.dumps(init[0]) + "\n")
        for rep in range(reps):
            for c in counts:
                lines = [recs[j] for j in by_count[c]]
                t0 = min(r["t"] for r in lines)
                shift = cursor - t0
                base = (rep * len(counts) + counts.index(c) + 1) << 48
                for r in lines:
                    o = dict(r)
                    o["t"] = r["t"] + shift
                    o["h"] = hex(int(r["h"], 16) + base)
                    for k in ("parent", "parentGroup"):
                        if k in o and o[k] != "(nil)":
                            o[k] = hex(int(o[k], 16) + base)
                    if "pTimer" in o:
                        o["pTimer"] = r["pTimer"] + shift
                    if o["cb"] == "start" and o["type"] == COLL:
                        o["seq"] = seq
                        seq += 1
                    f.write(json.dumps(o) + "\n")
                cursor = max(r["t"] for r in lines) + shift + 1000
        for r in fini:
            o = dict(r)
            o["t"] = cursor
            f.write(json.dumps(o) + "\n")


if __name__ == "__main__":
    main()
