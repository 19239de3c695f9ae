#!/usr/bin/env python3
"""oracle.py -- what a correct profiler must report for one NCCL capture.

An independent reader of shared/fixtures files (it shares no code with
collprof or collprof-replay).  It applies NCCL 2.28's emission rules for an
activation mask as shared/docs/nccl-profiler-abi.md states them (the mask is
the same for every API call here: the tests set it and keep KernelCh on for
every call), builds each event's call path by following parent links, and
prints JSON:

  {"paths": {path: events}, "path_states": {path: state records},
   "states": total state records, "events": total events,
   "kernelch_gpu_ns": sum over KernelCh of (state-22 pTimer - start pTimer),
   "path_gpu_ns": {KernelCh path: gpu ns}, "bad_lines": 0}

Path elements: the short type name, with ":func" for CollApi, P2pApi, Coll
and P2p and ":Send"/":Recv" (isSend) for ProxyOp; a NULL parent (or one
dropped by the mask) makes the event a root; elements joined with "/".

usage: oracle.py FILE [--mask M] [--api v5|v4]
  --mask M   default: the mask recorded at init
  --api v4   what a v4 plugin sees: no GroupApi/CollApi/P2pApi/KernelLaunch
             (nor their states); a Coll/P2p hangs under its Group (parentGroup)
"""
import argparse
import json
import sys

SHORT = {1: "Group", 2: "Coll", 4: "P2p", 8: "ProxyOp", 16: "ProxyStep",
         32: "ProxyCtrl", 64: "KernelCh", 128: "NetPlugin", 256: "GroupApi",
         512: "CollApi", 1024: "P2pApi", 2048: "KernelLaunch"}
BY_NAME = {v: k for k, v in SHORT.items()}
API_TYPES = {256, 512, 1024, 2048}


def bits(*names):
    m = 0
    for n in names:
        m |= BY_NAME[n]
    return m


UNDER = ("ProxyOp", "ProxyStep", "KernelCh", "NetPlugin")
# type -> the mask bits that make NCCL emit it (the doc's rules, verbatim)
NEEDS = {
    "GroupApi": bits("GroupApi", "CollApi", "P2pApi", "KernelLaunch", "Group", "Coll",
                     "P2p", *UNDER),
    "CollApi": bits("CollApi", "Coll", *UNDER),
    "P2pApi": bits("P2pApi", "P2p", *UNDER),
    "KernelLaunch": bits("KernelLaunch"),
    "Group": bits("Group", "Coll", "P2p", *UNDER),
    "Coll": bits("Coll", *UNDER),
    "P2p": bits("P2p", *UNDER),
    "ProxyOp": bits("ProxyOp"),
    "ProxyStep": bits("ProxyStep", "NetPlugin"),
    "KernelCh": bits("KernelCh"),
    "ProxyCtrl": bits("ProxyCtrl"),
    "NetPlugin": bits("NetPlugin"),
}


def element(rec):
    name = SHORT.get(rec["type"], "Unknown")
    if name in ("CollApi", "P2pApi", "Coll", "P2p"):
        return name + ":" + rec.get("func", "")
    if name == "ProxyOp":
        return name + (":Send" if rec.get("isSend") else ":Recv")
    return name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--mask", type=lambda s: int(s, 0))
    ap.add_argument("--api", default="v5", choices=["v5", "v4"])
    a = ap.parse_args()

    recs = [json.loads(line) for line in open(a.file)]
    mask = a.mask
    if mask is None:
        mask = next((r["mask"] for r in recs if r["cb"] == "init"), 4095)

    ev = {}        # handle -> {"path": str or None (dropped), "ptimer": int}
    paths, pstates, pgpu = {}, {}, {}
    states = events = 0
    gpu = 0
    for r in recs:
        cb = r["cb"]
        if cb == "start":
            t = r["type"]
            name = SHORT.get(t, "Unknown")
            keep = not (a.api == "v4" and t in API_TYPES)
            keep = keep and bool(mask & NEEDS.get(name, 0))
            path = None
            if keep:
                parent = r.get("parent", "(nil)")
                if a.api == "v4" and t in (2, 4):
                    parent = r.get("parentGroup", "(nil)")
                if parent == "(nil)":
                    prefix = None
                elif parent in ev:
                    prefix = ev[parent]["path"]          # None when it was dropped
                else:
                    prefix = "UnknownParent"
                path = element(r) if prefix is None else prefix + "/" + element(r)
            ev[r["h"]] = {"path": path, "ptimer": r.get("pTimer"), "stop": None,
                          "kc": t == 64}
        elif cb == "state":
            e = ev.get(r["h"])
            if e is None or e["path"] is None:
                continue
            states += 1
            pstates[e["path"]] = pstates.get(e["path"], 0) + 1
            if e["kc"] and r["state"] == 22 and "pTimer" in r:
                e["stop"] = r["pTimer"]
        elif cb == "stop":
            e = ev.get(r["h"])
            if e is None or e["path"] is None:
                continue
            events += 1
            paths[e["path"]] = paths.get(e["path"], 0) + 1
            if e["kc"] and e["stop"] is not None and e["ptimer"] is not None:
                d = e["stop"] - e["ptimer"]
                gpu += d
                pgpu[e["path"]] = pgpu.get(e["path"], 0) + d
    json.dump({"file": a.file, "mask": mask, "api": a.api, "paths": paths,
               "path_states": pstates, "states": states, "events": events,
               "kernelch_gpu_ns": gpu, "path_gpu_ns": pgpu,
               "bad_lines": 0},   # what a correct trace has
              sys.stdout, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
