#!/usr/bin/env python3
"""gpu_sampling_oracle.py — what collprof's GPU sampling must give when a
capture is replayed with live-mask emulation (test/gpu_sampling.t).

  gpu_sampling_oracle.py CAPTURE.jsonl N [start|stop]

Written from the rule in src/mask_control.c's header, sharing no code:
API calls (CollApi/P2pApi starts) are numbered k = 0, 1, ... in file order;
the mask that NCCL reads at a GroupApi start applies to the whole group
(the replay tool's emulation); call 0 is sampled when N >= 1; in the hook of
call k the next call's KernelCh is decided: N = 0 never, N = 1 always, else
k+1 is a periodic sample iff (k+1) % N == p(b), b = (k+1) // N, p(0) = 0,
p(b) = splitmix64(b) % N; or forced when call k was not sampled, k+1 is not
periodic, k's path has no GPU sample yet, the path never forced before and
forced samples so far are < 64 or < (k+1)/N.  A path has a GPU sample once a
KernelCh of one of its calls arrived (at the KernelCh start, or with the
third argument "stop", at its stop).

Prints JSON: {"sampled_calls": .., "paths": {coll/p2p path: calls that got
KernelCh}}.
"""
import json
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


def main():
    cap, n = sys.argv[1], int(sys.argv[2])
    mark_at = sys.argv[3] if len(sys.argv) > 3 else "start"
    kc_on = n >= 1            # KernelCh bit of the mask NCCL will read next
    group_kc = False
    k = 0
    sampled_calls = 0
    forced = set()
    nforced = 0
    seen = set()              # API paths with a GPU sample
    api_path = {}             # CollApi/P2pApi handle -> its path
    api_sampled = {}          # CollApi/P2pApi handle -> its group's KernelCh
    op_path = {}              # Coll/P2p handle -> (its path, api path, sampled)
    kc_parent = {}            # KernelCh handle -> Coll/P2p handle
    got = {}                  # Coll/P2p path -> set of Coll/P2p handles with a KernelCh
    for line in open(cap):
        r = json.loads(line)
        cb = r["cb"]
        if cb == "start":
            t = r["type"]
            if t == 256:
                group_kc = kc_on
            elif t in (512, 1024):
                p = ("GroupApi/CollApi:" if t == 512 else "GroupApi/P2pApi:") + r["func"]
                api_path[r["h"]] = p
                api_sampled[r["h"]] = group_kc
                s = group_kc
                sampled_calls += 1 if s else 0
                if n >= 2:
                    nxt = periodic(k + 1, n)
                    if (not nxt and not s and p not in seen and p not in forced and
                            (nforced < 64 or nforced * n < k + 1)):
                        forced.add(p)
                        nforced += 1
                        nxt = True
                    kc_on = nxt
                k += 1
            elif t in (2, 4):
                ap = api_path.get(r["parent"])
                if ap is None:
                    continue
                op = ap + ("/Coll:" if t == 2 else "/P2p:") + r["func"]
                op_path[r["h"]] = (op, ap, api_sampled[r["parent"]])
            elif t == 64:
                o = op_path.get(r["parent"])
                if o is None or not o[2]:
                    continue          # not emitted: that call's mask had no KernelCh
                kc_parent[r["h"]] = r["parent"]
                got.setdefault(o[0], set()).add(r["parent"])
                if mark_at == "start":
                    seen.add(o[1])
        elif cb == "stop" and mark_at == "stop" and r["h"] in kc_parent:
            seen.add(op_path[kc_parent[r["h"]]][1])
    print(json.dumps({"sampled_calls": sampled_calls,
                      "paths": {p: len(v) for p, v in sorted(got.items())}}, sort_keys=True))


if __name__ == "__main__":
    main()
