#!/usr/bin/env python3
"""gpu_sampling_oracle.py — what collprof's GPU sampling must give when a
capture is replayed with live-mask emulation (test/gpu_sampling.t).

  gpu_sampling_oracle.py CAPTURE.jsonl N [start|stop]

Written from the rule in src/gpu_sample_rule.c's header, sharing no code:
API calls (CollApi/P2pApi starts) are numbered k = 0, 1, ... in file order;
the mask that NCCL reads at a GroupApi start applies to the whole group
(the replay tool's emulation); call 0 is sampled when N >= 1; in the hook of
call k the next call's KernelCh is decided: N = 0 never, N = 1 always, else
k+1 is a periodic sample iff (k+1) % N == p(b), b = (k+1) // N, p(0) = 0,
p(b) = splitmix64(b) % N (small calls, below: two streams); or forced when call k was not sampled, k+1 is not
periodic, k's path has no GPU sample yet, the path never forced before and
forced samples so far are < 64 or < (k+1)/N.  A path has a GPU sample once a
KernelCh of one of its calls arrived (at the KernelCh start, or with the
third argument "stop", at its stop).  Class forcing: when call k is the
second of its size class (its count x datatype size, below) on its path,
neither it nor the first was sampled (a path's forced call takes its class
too), k+1 is not sampled anyway (periodic or forced), and the budget above
allows, k+1 is sampled as well, as a periodic sample (not a first-call
one); the class is taken either way.

Small calls (environment COLLPROF_GPU_SAMPLE_SMALL = M, default 16, and
COLLPROF_GPU_SAMPLE_SMALL_BYTES = B, default 1048576, rounded up to a power of
two; M = 1 or B = 0: one stream as above): the periodic decision in the
hook of call k is taken in one of two streams, by call k's own bytes (its
count x datatype size): small (0 < bytes < B) decisions are numbered
j = 1, 2, ... among themselves and periodic in blocks of M x N, the others
likewise among themselves in blocks of N (with no small call, j = k + 1:
the rule above).

The decision reaches NCCL only at the stop of the outermost GroupApi, and
for N >= 2 only one sample is in flight: a Coll/P2p of a sampled call makes
nChannels KernelCh events due; each KernelCh that starts while its parent
still has some of them due pays one back at its stop; an outermost group
stop that would turn KernelCh on while any are due leaves it off instead:
that sample is skipped (counted), not carried to a later call.  Call 0 and
forced calls are
first-call samples; a group's sampled calls are first-call ones when the
decision its mask came from was.  A Coll/P2p's
sample does not count (nor mark its path) once 32 or more Coll/P2p of
KernelCh-on calls started on the communicator after it, by the stop of one
of its KernelCh (NCCL's 64 timestamp slots may have been reused).

Start delay (environment COLLPROF_GPU_SAMPLE_DELAY_MS): a number must be 0
here (a delay is time, not modeled); unset, empty or "auto" with N >= 2 is
the default rule: a capture whose inits before its first GroupApi are all
of distinct commIds runs no delay, but call 0 read its mask before that
count (init publishes KernelCh off), so call 0 is not sampled and the rule
goes on from its hook; with a commId twice the delay runs (not modeled:
exit 1).

Prints JSON: {"sampled_calls": .., "skipped": .., "paths": {coll/p2p path: calls that got
KernelCh}, "first": {coll/p2p path: those of them that are first-call
samples}, "sizes": {coll/p2p path with samples: [[smallest bytes of the
size class, calls, samples, first-call samples], ...]}}: a call's class is
its count x datatype size in [2^(k-1), 2^k) bytes, smallest 2^(k-1) (0
bytes: 0).
"""
import json
import os
import sys

M64 = (1 << 64) - 1


def splitmix64(b):
    z = (b * 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def periodic(k, n):
    if n <= 0:
        return False
    if n == 1:
        return True
    b = k // n
    pos = splitmix64(b) % n if b else 0
    return k % n == pos


DTSIZE = {"ncclInt8": 1, "ncclChar": 1, "ncclUint8": 1, "ncclInt32": 4, "ncclInt": 4,
          "ncclUint32": 4, "ncclInt64": 8, "ncclUint64": 8, "ncclFloat16": 2, "ncclHalf": 2,
          "ncclBfloat16": 2, "ncclFloat32": 4, "ncclFloat": 4, "ncclFloat64": 8, "ncclDouble": 8,
          "ncclFloat8e4m3": 1, "ncclFloat8e5m2": 1}


def nbytes(r):
    return int(r.get("count", 0)) * DTSIZE.get(r.get("datatype"), 0)


def size_class(r):
    b = nbytes(r)
    return 0 if b == 0 else 1 << (b.bit_length() - 1)


def small_rule():
    m = int(os.environ.get("COLLPROF_GPU_SAMPLE_SMALL") or 16)
    b = int(os.environ.get("COLLPROF_GPU_SAMPLE_SMALL_BYTES") or 1048576)
    if b & (b - 1):
        b = 1 << b.bit_length()
    return (m, b) if m > 1 and b else (1, 0)


def main():
    cap, n = sys.argv[1], int(sys.argv[2])
    mark_at = sys.argv[3] if len(sys.argv) > 3 else "start"
    next_kc = n >= 1          # decided in the hook of the last call
    next_first = n >= 2       # ...and it is a first-call sample
    group_first = False
    published = n >= 1        # KernelCh bit of the mask NCCL reads next
    delay = os.environ.get("COLLPROF_GPU_SAMPLE_DELAY_MS", "")
    if n >= 2 and delay.strip().lower() in ("", "auto"):
        ids = []
        for line in open(cap):
            r = json.loads(line)
            if r["cb"] == "init":
                ids.append(r["commId"])
            elif r["cb"] == "start" and r["type"] == 256:
                break
        if len(set(ids)) != len(ids) or "0" in ids or len(ids) > 64:
            sys.exit("gpu_sampling_oracle.py: %d inits of %d communicators at the first call: the start delay "
                     "runs (time: not modeled)" % (len(ids), len(set(ids))))
        next_kc = next_first = published = False   # call 0 read the mask init published
    elif n >= 2 and int(delay) != 0:
        sys.exit("gpu_sampling_oracle.py: COLLPROF_GPU_SAMPLE_DELAY_MS=%s: a delay is time, not modeled" % delay)
    skipped = 0               # samples skipped while KernelCh were due
    group_kc = False
    open_groups = 0
    group_handles = set()
    due = 0                   # KernelCh events due (one sample in flight)
    due_left = {}             # Coll/P2p handle -> KernelCh still due to it
    kc_pays = set()           # KernelCh handles that pay one back at stop
    kc_ops = {}               # ctx -> Coll/P2p of KernelCh-on calls started
    op_seq = {}               # Coll/P2p handle -> kc_ops of its ctx after it
    op_ctx = {}
    bad = set()               # Coll/P2p handles whose sample is dropped
    k = 0
    small_m, small_b = small_rule()
    streams = {True: 0, False: 0}   # decisions so far: small, the others
    sampled_calls = 0
    forced = set()
    nforced = 0
    seen = set()              # API paths with a GPU sample
    cls_taken = set()         # (API path, size class) done with class forcing
    cls_once = set()          # (API path, size class) whose first call was seen
    api_path = {}             # CollApi/P2pApi handle -> its path
    api_sampled = {}          # CollApi/P2pApi handle -> its group's KernelCh
    api_first = {}            # ... -> a first-call sample
    op_path = {}              # Coll/P2p handle -> (its path, api path, sampled)
    op_first = {}             # Coll/P2p handle -> of a first-call sample
    kc_parent = {}            # KernelCh handle -> Coll/P2p handle
    got = {}                  # Coll/P2p path -> set of Coll/P2p handles with a KernelCh
    op_cls = {}               # Coll/P2p handle -> its size class
    cls_calls = {}            # (Coll/P2p path, class) -> calls
    for line in open(cap):
        r = json.loads(line)
        cb = r["cb"]
        if cb == "start":
            t = r["type"]
            if t == 256:
                if open_groups == 0:
                    group_kc = published
                    group_first = published and next_first
                open_groups += 1
                group_handles.add(r["h"])
            elif t in (512, 1024):
                p = ("GroupApi/CollApi:" if t == 512 else "GroupApi/P2pApi:") + r["func"]
                api_path[r["h"]] = p
                api_sampled[r["h"]] = group_kc
                api_first[r["h"]] = group_first
                s = group_kc
                sampled_calls += 1 if s else 0
                if n >= 2:
                    if small_m > 1:
                        small = 0 < nbytes(r) < small_b
                        streams[small] += 1
                        nxt = periodic(streams[small], n * small_m if small else n)
                    else:
                        nxt = periodic(k + 1, n)
                    first = False
                    c = size_class(r)
                    budget = nforced < 64 or nforced * n < k + 1
                    if not nxt and not s and p not in seen and p not in forced and budget:
                        forced.add(p)
                        cls_taken.add((p, c))
                        nforced += 1
                        nxt = first = True
                    if (p, c) not in cls_taken:
                        if (p, c) not in cls_once:
                            cls_once.add((p, c))
                            if s:
                                cls_taken.add((p, c))
                        else:
                            cls_taken.add((p, c))
                            if not s and not nxt and (nforced < 64 or nforced * n < k + 1):
                                nforced += 1
                                nxt = True
                    next_kc, next_first = nxt, first
                k += 1
            elif t in (2, 4):
                ap = api_path.get(r["parent"])
                if ap is None:
                    continue
                op = ap + ("/Coll:" if t == 2 else "/P2p:") + r["func"]
                sampled = api_sampled[r["parent"]]
                op_path[r["h"]] = (op, ap, sampled)
                op_first[r["h"]] = api_first[r["parent"]]
                op_cls[r["h"]] = size_class(r)
                cls_calls[(op, op_cls[r["h"]])] = cls_calls.get((op, op_cls[r["h"]]), 0) + 1
                bad.discard(r["h"])
                if sampled:
                    ctx = r.get("ctx")
                    kc_ops[ctx] = kc_ops.get(ctx, 0) + 1
                    op_seq[r["h"]], op_ctx[r["h"]] = kc_ops[ctx], ctx
                    ch = max(1, int(r.get("nChannels", 1)))
                    due_left[r["h"]] = ch
                    if n >= 2:
                        due += ch
            elif t == 64:
                o = op_path.get(r["parent"])
                if o is None or not o[2]:
                    continue          # not emitted: that call's mask had no KernelCh
                kc_parent[r["h"]] = r["parent"]
                if due_left.get(r["parent"], 0) > 0:
                    due_left[r["parent"]] -= 1
                    if n >= 2:
                        kc_pays.add(r["h"])
                if mark_at == "start":
                    got.setdefault(o[0], set()).add(r["parent"])
                    seen.add(o[1])
        elif cb == "stop" and r["h"] in group_handles:
            group_handles.discard(r["h"])
            open_groups -= 1
            if open_groups == 0 and n >= 2:
                if next_kc and due > 0:
                    skipped += 1
                    published = False
                else:
                    published = next_kc
        elif cb == "stop" and r["h"] in kc_parent:
            h = r["h"]
            par = kc_parent.pop(h)
            if h in kc_pays:
                kc_pays.discard(h)
                due -= 1
            if par in op_seq and kc_ops[op_ctx[par]] - op_seq[par] >= 32:
                bad.add(par)
            if mark_at == "stop" and par not in bad:
                got.setdefault(op_path[par][0], set()).add(par)
                seen.add(op_path[par][1])
    for p in got:
        got[p] = {h for h in got[p] if h not in bad}
    got = {p: v for p, v in got.items() if v}
    first = {p: sum(1 for h in v if op_first.get(h)) for p, v in got.items()}
    sizes = {}
    for p, v in got.items():
        tab = {}
        for (op, c), n in cls_calls.items():
            if op == p:
                tab.setdefault(c, [c, 0, 0, 0])[1] += n
        for h in v:
            t = tab.setdefault(op_cls[h], [op_cls[h], 0, 0, 0])
            t[2] += 1
            t[3] += 1 if op_first.get(h) else 0
        sizes[p] = [tab[c] for c in sorted(tab)]
    print(json.dumps({"sampled_calls": sampled_calls, "skipped": skipped,
                      "paths": {p: len(v) for p, v in sorted(got.items())},
                      "first": {p: c for p, c in sorted(first.items()) if c},
                      "sizes": dict(sorted(sizes.items()))}, sort_keys=True))


if __name__ == "__main__":
    main()
