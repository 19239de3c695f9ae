#!/usr/bin/env python3
"""trace_counts.py -- what a collprof trace file says, in oracle.py's shape.

Reads one <outdir>/pid<PID>.jsonl (or rank<R>.jsonl) that collprof wrote and
prints JSON with the same keys as oracle.py, so the two can be compared:

  paths            {path: calls} from the "path" records at the end
  event_paths      {path: event records} counting "event" records per path id
                   (ProfilerLifecycle records left out)
  path_states      {path: states} from the path records
  states           state records in the file
  kernelch_gpu_ns  sum of gpu_ns over the path records whose leaf is KernelCh
  event_kernelch_gpu_ns  sum of details.gpuStop - details.gpuStart over
                   KernelCh event records
  bad_lines        lines that are not one whole JSON object (with the first
                   few in bad_examples)
  rank             the rank summary record, pxn: per path, event records with
                   isPxn true, and origin_pids seen

Numbers are read as Python ints (exact for the 1.8e18 GPU timers).
usage: trace_counts.py FILE
"""
import json
import os
import re
import sys


# Big traces (the stress test writes millions of lines) are read in a fast
# mode: event and state lines are checked for shape (one object, balanced
# braces and quotes, newline-terminated) and their few needed fields taken
# with regular expressions; every 64th of them, and every other line, is
# parsed fully and must agree.  Small files are always parsed fully.
FAST_BYTES = 64 << 20
R_PATH = re.compile(rb'"path":(-?\d+|null)[,}]')
R_TYPE = re.compile(rb'"type":"([^"]*)"')
R_ORIGIN = re.compile(rb'"originPid":(-?\d+)')
R_GPU = re.compile(rb'"gpuStart":(\d+),"gpuStop":(\d+)')


def fast_fields(raw):
    """(kind, type, path, isPxn, originPid, gpu) of an event/state line, or None."""
    if not (raw.endswith(b"}\n") and raw.count(b"{") == raw.count(b"}")
            and raw.count(b'"') % 2 == 0 and raw.count(b"\n") == 1):
        return None
    if raw.startswith(b'{"recordType":"state",'):
        return ("state", None, None, False, None, 0)
    if not raw.startswith(b'{"recordType":"event",'):
        return None
    t = R_TYPE.search(raw)
    p = R_PATH.search(raw)
    if not t or not p:
        return None
    typ = t.group(1).decode()
    path = None if p.group(1) == b"null" else int(p.group(1))
    pxn = b'"isPxn":true' in raw
    o = R_ORIGIN.search(raw)
    gpu = 0
    if typ == "ncclProfileKernelCh":
        g = R_GPU.search(raw)
        gpu = int(g.group(2)) - int(g.group(1)) if g else 0
    return ("event", typ, path, pxn, int(o.group(1)) if o else None, gpu)


def full_fields(r):
    rt = r.get("recordType")
    if rt == "state":
        return ("state", None, None, False, None, 0)
    if rt != "event":
        return None
    gpu = 0
    if r.get("type") == "ncclProfileKernelCh":
        d = r.get("details") or {}
        if isinstance(d.get("gpuStop"), int) and isinstance(d.get("gpuStart"), int):
            gpu = d["gpuStop"] - d["gpuStart"]
    pxn = r.get("isPxn") is True
    return ("event", r.get("type"), r.get("path"), pxn, r.get("originPid") if pxn else None, gpu)


def summarize(f):
    fast = os.path.getsize(f) > FAST_BYTES
    bad, bad_examples = 0, []
    path_recs = []
    ev_by_local = {}
    pxn_by_local = {}
    origin_pids = set()
    states = 0
    ev_gpu = 0
    rank = None
    nevents = 0
    lifecycle = 0
    n = 0

    def fail(msg, raw):
        nonlocal bad
        bad += 1
        if len(bad_examples) < 3:
            bad_examples.append("%s: %r" % (msg, raw[:200]))

    with open(f, "rb") as fh:
        for raw in fh:
            n += 1
            ff = fast_fields(raw) if fast else None
            if ff is None or n % 64 == 0:
                try:
                    if not raw.endswith(b"\n"):
                        raise ValueError("line without newline")
                    r = json.loads(raw)
                    if not isinstance(r, dict):
                        raise ValueError("not an object")
                except Exception as e:  # noqa: BLE001 -- any unparsable line counts
                    fail(str(e), raw)
                    continue
                if r.get("recordType") == "event" and r.get("type") == "ProfilerLifecycle":
                    lifecycle += 1
                    continue
                full = full_fields(r)
                if ff is not None and ff != full:
                    fail("fast reading %r != parse %r" % (ff, full), raw)
                ff = full
                if ff is None:
                    if r.get("recordType") == "path":
                        path_recs.append(r)
                    elif r.get("recordType") == "rank":
                        rank = r
                    continue
            kind, typ, p, pxn, origin, gpu = ff
            if kind == "state":
                states += 1
                continue
            if typ == "ProfilerLifecycle":
                lifecycle += 1
                continue
            nevents += 1
            ev_by_local[p] = ev_by_local.get(p, 0) + 1
            if pxn:
                pxn_by_local[p] = pxn_by_local.get(p, 0) + 1
                origin_pids.add(origin)
            ev_gpu += gpu
    names = {p.get("local"): p.get("path") for p in path_recs}
    out = {
        "file": f,
        "paths": {p["path"]: p.get("calls", 0) for p in path_recs if p.get("calls")},
        "path_states": {p["path"]: p.get("states", 0) for p in path_recs if p.get("states")},
        "event_paths": {names.get(k, "?local=%s" % k): v for k, v in ev_by_local.items()},
        "pxn_paths": {names.get(k, "?local=%s" % k): v for k, v in pxn_by_local.items()},
        "origin_pids": sorted(x for x in origin_pids if x is not None),
        "states": states,
        "events": nevents,
        # what the trace would hold had no ring overflowed
        "lifecycle": lifecycle,
        "records_plus_dropped": nevents + states + lifecycle + int((rank or {}).get("traceDropped") or 0),
        "fast_mode": fast,
        "kernelch_gpu_ns": sum(p.get("gpu_ns", 0) for p in path_recs
                               if p.get("leafType") == "ncclProfileKernelCh"),
        "path_gpu_ns": {p["path"]: p.get("gpu_ns", 0) for p in path_recs
                        if p.get("leafType") == "ncclProfileKernelCh" and p.get("gpu_ns")},
        "event_kernelch_gpu_ns": ev_gpu,
        "npath_records": len(path_recs),
        "bad_lines": bad,
        "bad_examples": bad_examples,
        "rank": rank,
    }
    return out


def main():
    json.dump(summarize(sys.argv[1]), sys.stdout, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
