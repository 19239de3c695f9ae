#!/usr/bin/env python3
"""check_run_fake.py — a made-up collprof-gpu-app run for test/check_run.t:
the app's counts.<rank>.json, collprof's rank<R>.jsonl files and
summary.json, consistent with each other unless a defect is asked for, so
that test/gpu/check_run.py can be shown to pass a good run and to fail
(or skip, where its rules say so) each defect.

  check_run_fake.py DIR [DEFECT...]

DIR gets app/ and prof/.  Two ranks; each made AllReduce (100 eager calls,
8 MiB in all) and Send/Recv (10 each); rank 1 also captured 4 AllReduce
calls in a CUDA graph and replayed it 5 times (20 calls).  Defects:
  coll-off-by-one     rank 1's Coll AllReduce path counts one call too many
  api-off-by-one      rank 0's CollApi AllReduce path one call too few
  no-gpu              rank 0's Coll AllReduce path has no GPU time
  drop-20             rank 0 dropped 20% of its GPU samples (gpuSample 16)
  frozen-kc-on        rank 0's mask froze with KernelCh on (second thread)
  frozen-kc-off       both ranks' masks froze with KernelCh off at their
                      second thread's first call (the start delay's aim):
                      no KernelCh sample, no GPU time from KernelCh, and
                      rank 1's graph replays give no event
  every-call          gpuSample 1 on both ranks
  summary-dropped     summary.json's gpu_samples_dropped off by one
  summary-calls       summary.json's Coll AllReduce calls off by one
  frozen-missing      summary.json's mask_frozen lacks a reason
  bad-line            rank 1's file has a line that is not JSON
  capture-event       rank 1's capture gave Coll events (4 more calls)
  capture-mixed       capture-event, and rank 0 captured too without events
  hidden-replays      rank 1 froze at the capture with KernelCh off: its
                      replays give no event
  capture-timed       rank 1 skipped one launch fewer than it captured calls
                      (a captured launch timed: LAUNCH_ALL=1 fails it)
  summary-launches    summary.json's gpu_launches_timed off by one
"""
import json
import os
import sys

d, defects = sys.argv[1], set(sys.argv[2:])
os.makedirs(os.path.join(d, "app"), exist_ok=True)
os.makedirs(os.path.join(d, "prof"), exist_ok=True)
MIB = 1 << 20
funcs = {}
for r in (0, 1):
    ar = {"api": 100, "eager": 100, "replayed": 0, "captured": 0,
          "eagerBytes": 8 * MIB, "replayedBytes": 0, "capturedBytes": 0}
    if r == 1 or "capture-mixed" in defects:
        ar.update(api=104, captured=4, capturedBytes=4 * 65536, replayed=20, replayedBytes=20 * 65536)
    p2p = {"api": 10, "eager": 10, "replayed": 0, "captured": 0,
           "eagerBytes": 10 * 4096, "replayedBytes": 0, "capturedBytes": 0}
    funcs[r] = {"AllReduce": ar, "Send": dict(p2p), "Recv": dict(p2p)}
    # two threads' worth: the checker sums over threads and comms
    half = {fn: {k: v // 2 for k, v in c.items()} for fn, c in funcs[r].items()}
    rest = {fn: {k: v - half[fn][k] for k, v in c.items()} for fn, c in funcs[r].items()}
    json.dump({"worldRank": r, "threads": [{"comms": [{"funcs": half}]}, {"comms": [{"funcs": rest}]}]},
              open(os.path.join(d, "app", "counts.%d.json" % r), "w"))

summary_paths = {}
recs = {}
for r in (0, 1):
    frozen = ""
    if r == 0 and "frozen-kc-on" in defects:
        frozen = "second calling thread: KernelCh on"
    if r == 1 and "hidden-replays" in defects:
        frozen = "graph capture: KernelCh off"
    if "frozen-kc-off" in defects:
        frozen = "NCCL calls from a second thread, KernelCh off"
    paths = []
    pid = 0
    for fn, c in funcs[r].items():
        api_t, op_t = (("ncclProfileP2pApi", "ncclProfileP2p") if fn in ("Send", "Recv")
                       else ("ncclProfileCollApi", "ncclProfileColl"))
        calls, byts = c["eager"], c["eagerBytes"]
        if "KernelCh off" not in frozen:   # replays hidden (check_run.py)
            calls, byts = calls + c["replayed"], byts + c["replayedBytes"]
        if "capture-event" in defects and r == 1 or "capture-mixed" in defects and r == 1:
            calls, byts = calls + c["captured"], byts + c["capturedBytes"]
        api = c["api"]
        if fn == "AllReduce" and r == 0 and "api-off-by-one" in defects:
            api -= 1
        if fn == "AllReduce" and r == 1 and "coll-off-by-one" in defects:
            calls += 1
        gpu, smp = (0, 0) if fn == "AllReduce" and r == 0 and "no-gpu" in defects else (calls * 9000, 7)
        if "frozen-kc-off" in defects:
            gpu, smp = 0, 0
        pid += 1
        paths.append({"recordType": "path", "local": pid, "leafType": api_t, "leafFunc": fn, "calls": api,
                      "bytes": 0, "gpu_ns": 0, "gpu_samples": 0})
        pid += 1
        # a path record seen twice (local, then global ids): the last one counts
        paths.append({"recordType": "path", "local": pid, "leafType": op_t, "leafFunc": fn, "calls": 1,
                      "bytes": 1})
        paths.append({"recordType": "path", "local": pid, "leafType": op_t, "leafFunc": fn, "calls": calls,
                      "bytes": byts, "gpu_ns": gpu, "gpu_samples": smp})
        for p in paths[-3:]:
            if p["calls"] == 1 and p["bytes"] == 1:
                continue
            key = (p["leafType"], fn)
            s = summary_paths.setdefault(key, {"leafType": p["leafType"], "leafFunc": fn, "calls": 0,
                                               "bytes": 0, "gpu_ns": 0, "gpu_samples": 0})
            for k in ("calls", "bytes", "gpu_ns", "gpu_samples"):
                s[k] += p.get(k, 0)
    every = 1 if "every-call" in defects else 16
    sampled = 0 if "frozen-kc-off" in defects else 20
    dropped = 4 if r == 0 and ("drop-20" in defects or "frozen-kc-on" in defects or "every-call" in defects) else 1
    if "frozen-kc-off" in defects:
        dropped = 0
    rk = {"recordType": "rank", "rank": r, "gpuSample": every, "gpuSampledCalls": sampled,
          "gpuSamplesDropped": dropped, "gpuSamplesDeferred": 2, "gpuSampleGateResets": 0,
          "traceDropped": 0, "badCalls": 0, "maskFrozen": frozen,
          "gpuLaunchesTimed": 30 + r, "gpuLaunchesUnattributed": 2, "gpuLaunchesUnread": 0, "gpuLaunchesIdle": 3,
          "gpuLaunchesSkipped": funcs[r]["AllReduce"]["captured"] - (r == 1 and "capture-timed" in defects)}
    recs[r] = rk
    lines = [json.dumps({"recordType": "event", "type": "ncclProfileColl"})]
    lines += [json.dumps(p) for p in paths] + [json.dumps(rk)]
    if r == 1 and "bad-line" in defects:
        lines.insert(1, '{"recordType": "event", "type": ')
    open(os.path.join(d, "prof", "rank%d.jsonl" % r), "w").write("\n".join(lines) + "\n")

s = {"paths": list(summary_paths.values())}
for rk_key, sk in (("gpuSampledCalls", "gpu_sampled_calls"), ("gpuSamplesDropped", "gpu_samples_dropped"),
                   ("gpuSamplesDeferred", "gpu_samples_deferred"), ("traceDropped", "trace_dropped"),
                   ("badCalls", "bad_calls"), ("gpuLaunchesTimed", "gpu_launches_timed"),
                   ("gpuLaunchesUnattributed", "gpu_launches_unattributed"),
                   ("gpuLaunchesSkipped", "gpu_launches_skipped"), ("gpuLaunchesUnread", "gpu_launches_unread"),
                   ("gpuLaunchesIdle", "gpu_launches_idle")):
    s[sk] = sum(rk[rk_key] for rk in recs.values())
if "summary-launches" in defects:
    s["gpu_launches_timed"] += 1
if "summary-dropped" in defects:
    s["gpu_samples_dropped"] += 1
if "summary-calls" in defects:
    for p in s["paths"]:
        if p["leafType"] == "ncclProfileColl" and p["leafFunc"] == "AllReduce":
            p["calls"] += 1
groups = {}
for r, rk in recs.items():
    if rk["maskFrozen"]:
        groups.setdefault(rk["maskFrozen"], []).append(r)
s["mask_frozen"] = [{"reason": k, "nranks": len(v), "ranks": v} for k, v in sorted(groups.items())]
if "frozen-missing" in defects:
    s["mask_frozen"] = []
json.dump(s, open(os.path.join(d, "prof", "summary.json"), "w"))
