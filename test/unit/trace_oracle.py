#!/usr/bin/env python3
"""trace_oracle.py — independent check of the JSONL files the trace writer
wrote, used by test_trace_writer.c.  Shares no code with the plugin: the
expected record of each synthetic cp_rec is rebuilt here from the same
generating formula (documented in test_trace_writer.c: make_rec) and
compared field by field, in order, with Python's own formatting of the
numbers and Python's UTF-8 'replace' decoding of the strings.

usage: trace_oracle.py MODE FILE EXPECT.json
  MODE many  - every line parses; meta first; each synthetic record exact;
               tail (path*, rank, clock?) last
  MODE count - every line parses; meta first; N records (EXPECT "records")
  MODE tail  - the plugin-driven file of the "tail" scenario
  MODE fields - the plugin-driven file of the "fields" scenario: EXPECT
               lists each event's fields as they went into the callbacks
Exit 0 when good; prints the first problems otherwise.
"""
import json
import sys
from decimal import Decimal

TYPES = {1: "ncclProfileGroup", 2: "ncclProfileColl", 4: "ncclProfileP2p",
         8: "ncclProfileProxyOp", 16: "ncclProfileProxyStep",
         32: "ncclProfileProxyCtrl", 64: "ncclProfileKernelCh",
         128: "ncclProfileNetPlugin", 256: "ncclProfileGroupApi",
         512: "ncclProfileCollApi", 1024: "ncclProfileP2pApi",
         2048: "ncclProfileKernelLaunch"}
STATES = {8: "ProxyStepSendGPUWait", 9: "ProxyStepSendWait", 10: "ProxyStepRecvWait",
          11: "ProxyStepRecvFlushWait", 12: "ProxyStepRecvGPUWait", 13: "ProxyCtrlIdle",
          14: "ProxyCtrlActive", 15: "ProxyCtrlSleep", 16: "ProxyCtrlWakeup",
          17: "ProxyCtrlAppend", 18: "ProxyCtrlAppendEnd", 19: "ProxyOpInProgress",
          20: "ProxyStepSendPeerWait", 21: "NetPluginUpdate", 22: "KernelChStop",
          23: "GroupStartApiStop", 24: "GroupEndApiStart"}
META_KEYS = ["recordType", "tool", "version", "pid", "host", "wallTime", "wallNs", "ts",
             "eventMask", "config", "command"]
RANK_KEYS = ["recordType", "rank", "worldSize", "pid", "host", "startWall", "startTs", "endTs",
             "eventMask", "gpuSample", "gpuSampleSmall", "gpuSampleSmallBytes", "gpuSampleDelayMs", "gpuSampleDelayAuto", "traceOn", "ncclVersion", "periods", "windows", "maskFrozen", "eventsRecorded",
             "eventsCounted", "eventsPxn", "unterminated", "blacklistEvictions", "unknownParent", "traceDropped",
             "badCalls", "gpuSampledCalls", "gpuSamplesDropped", "gpuSamplesDeferred", "gpuSampleGateResets",
             "gpuLaunchesTimed", "gpuLaunchesUnattributed", "gpuLaunchesSkipped", "gpuLaunchesUnread", "gpuLaunchesIdle", "memoryBytes",
             "perEventCostNs", "costCallbacks", "costTimedNs", "costWindows", "costWindowNs", "costSpanNs",
             "costSlowNs", "costNs", "costErrNs", "costDenseSpanNs", "costDenseWindows",
             "costDenseWindowNs", "costDenseTimedNs", "costDenseCallbacks", "costDenseSlowNs", "costDenseNs", "costSetupNs",
             "command", "comms"]
PATH_KEYS = ["recordType", "id", "local", "hash", "path", "leafType", "leafFunc", "calls",
             "total_ns", "self_ns", "min_ns", "max_ns", "bytes", "states", "gpu_ns",
             "gpu_samples", "gpu_first_ns", "gpu_first_samples", "unterminated"]
COMM_KEYS = ["commId", "commName", "nranks", "nNodes", "rank", "gpuUuid", "events", "gpuOffsetNs"]

problems = []


def bad(msg):
    problems.append(msg)


def us(ns):
    return Decimal(ns) / Decimal(1000)


def hx(v):
    return None if v == 0 else "0x%x" % v


def load(path):
    recs = []
    with open(path, "rb") as f:
        data = f.read()
    if data and not data.endswith(b"\n"):
        bad("file does not end with a newline (partial line)")
    for n, line in enumerate(data.split(b"\n")[:-1], 1):
        try:
            recs.append(json.loads(line.decode("utf-8"), parse_float=Decimal))
        except Exception as e:  # noqa: BLE001
            bad("line %d does not parse: %s: %r" % (n, e, line[:200]))
            recs.append(None)
    return recs


def check_meta(m):
    if not m or m.get("recordType") != "meta":
        bad("first line is not the meta record")
        return
    if list(m.keys()) != META_KEYS:
        bad("meta keys %s" % list(m.keys()))
    if m["tool"] != "collprof" or not isinstance(m["pid"], int):
        bad("meta tool/pid")
    if not m["wallTime"].endswith("Z") or "T" not in m["wallTime"]:
        bad("meta wallTime %s" % m["wallTime"])
    for k in ["eventMask", "gpuSample", "periods", "trace", "capture", "quiet", "poolSize",
              "blacklistCap", "traceBuffer", "traceNice", "launchSample", "launchIntervalUs", "launchRun", "gpuSampleUs", "gpuSampleSmall", "gpuSampleSmallBytes", "gpuSampleDelayMs",
              "launchRunGapUs", "launchMinBytes", "outputDir"]:
        if k not in m["config"]:
            bad("meta config lacks %s" % k)


def split_tail(recs):
    """Body records and tail records; the tail must be path*, rank, clock?"""
    i = len(recs)
    if i and recs[i - 1] and recs[i - 1].get("recordType") == "clock":
        i -= 1
    if not (i and recs[i - 1] and recs[i - 1].get("recordType") == "rank"):
        return recs[1:], None
    i -= 1
    while i > 1 and recs[i - 1] and recs[i - 1].get("recordType") == "path":
        i -= 1
    tail = recs[i:]
    body = recs[1:i]
    for r in body:
        if r and r.get("recordType") in ("path", "rank", "clock"):
            bad("a tail record is not at the end of the file")
            break
    return body, tail


def check_tail(tail):
    if tail is None:
        bad("no rank record at the end")
        return None
    paths = [r for r in tail if r["recordType"] == "path"]
    rank = [r for r in tail if r["recordType"] == "rank"][0]
    for p in paths:
        if list(p.keys()) != PATH_KEYS:
            bad("path keys %s" % list(p.keys()))
        if not (p["hash"].startswith("0x") and len(p["hash"]) == 18):
            bad("path hash %s" % p["hash"])
    if list(rank.keys()) != RANK_KEYS:
        bad("rank keys %s" % list(rank.keys()))
    for c in rank["comms"]:
        if list(c.keys()) != COMM_KEYS:
            bad("comm keys %s" % list(c.keys()))
    return paths, rank


def s_of(exp, k):
    return bytes.fromhex(exp["strs"][k]).decode("utf-8", "replace")


def expected(exp, t, i):
    """The record make_rec(t, i) in test_trace_writer.c must become."""
    per = exp["per"]
    nstr = len(exp["strs"])
    g = t * per + i
    sel = g % 16
    start = 1000000000 + g * 1001
    stop = start + (g % 5000) * 7
    addr = 0x7F0000000000 + g
    parent = 0x550000000000 + g if g % 3 else 0
    comm = exp["commB"] if g % 2 else exp["commA"]
    ctx = 0x1000 + comm["index"]
    rank = comm["rank"] if g % 3 == 0 else g % 4
    path = g % 100
    func = s_of(exp, g % nstr)
    if 12 <= sel < 14:
        st = 8 + g % 20
        d = {"recordType": "state", "eventAddr": hx(addr), "ts": us(start),
             "name": STATES.get(st, "State%d" % st), "id": st, "pid": 4242, "tid": 100 + t}
        k = g % 4
        if k == 1:
            d["transSize"] = g * 13
        elif k == 2:
            d["appendedProxyOps"] = g * 13
        elif k == 3:
            d["gpuStop"] = g * 13
        return d
    if sel == 14:
        name = bytes.fromhex(comm["name_hex"]).decode("utf-8", "replace")
        return {"recordType": "event", "type": "ProfilerLifecycle",
                "func": "ProfilerFinalize" if g % 2 else "ProfilerInit",
                "gpuUuid": comm["uuid"], "commId": comm["id"], "rank": rank,
                "start": {"ts": us(start), "pid": 4242, "tid": 100 + t},
                "stop": {"ts": us(start), "pid": 4242, "tid": 200 + t},
                "duration": Decimal(0), "myPid": 4242, "parentObj": None,
                "eventAddr": hx(addr), "ctx": hx(ctx), "isPxn": False,
                "details": {"nranks": comm["nranks"], "nNodes": comm["nnodes"],
                            "commName": name, "eventMask": g % 4096}}
    pxn = sel == 15
    typ = 8 if pxn else 1 << sel
    d = {"recordType": "event", "type": TYPES[typ], "func": func,
         "gpuUuid": "" if pxn else comm["uuid"], "commId": "0" if pxn else comm["id"],
         "rank": -1 if pxn else rank,
         "start": {"ts": us(start), "pid": 4242, "tid": 100 + t},
         "stop": {"ts": us(stop), "pid": 4242, "tid": 200 + t},
         "duration": us(stop - start), "myPid": 4242}
    if pxn:
        d["originPid"] = 999
    d["parentObj"] = hx(parent)
    d["eventAddr"] = hx(addr)
    if not pxn:
        d["ctx"] = hx(ctx)
    d["isPxn"] = pxn
    d["path"] = path
    dt = s_of(exp, (g + 1) % nstr)
    if typ == 256:
        det = {"groupDepth": g % 3, "graphCaptured": bool(g % 2)}
    elif typ == 512:
        det = {"func": func, "count": g * 3, "datatype": dt, "root": g % 2,
               "graphCaptured": bool(g % 2)}
    elif typ == 1024:
        det = {"func": func, "count": g * 3, "datatype": dt, "graphCaptured": bool(g % 2)}
    elif typ == 2048:
        det = {"stream": hx(0xABC000 + g)}
    elif typ == 2:
        det = {"func": func, "seq": g, "count": g * 3, "datatype": dt, "root": g % 2,
               "algo": s_of(exp, (g + 2) % nstr), "proto": s_of(exp, (g + 3) % nstr),
               "channels": g % 32, "nWarps": g % 8}
    elif typ == 4:
        det = {"func": func, "peer": g % 7, "count": g * 3, "datatype": dt, "channels": g % 32}
    elif typ == 8:
        det = {"channelId": g % 32, "peer": g % 7, "nSteps": g % 9, "chunkSize": g * 2,
               "isSend": g % 2}
    elif typ == 16:
        det = {"step": g % 11}
    elif typ == 64:
        det = {"channelId": g % 32, "gpuStart": 1800000000000000000 + g,
               "gpuStop": 1800000000000000000 + g + 500 + g % 100}
    elif typ == 128:
        det = {"id": -g}
    else:
        det = {}
    d["details"] = det
    return d


def same(a, b):
    """Equal values and equal key order, recursively."""
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def mode_many(recs, exp):
    check_meta(recs[0] if recs else None)
    body, tail = split_tail(recs)
    check_tail(tail)
    want = exp["puts"] - exp["dropped"]
    if len(body) != want:
        bad("%d records, expected %d" % (len(body), want))
    seen = set()
    for r in body:
        if r is None:
            continue
        tid = r["tid"] if r["recordType"] == "state" else r["start"]["tid"]
        t = tid - 100
        g = int(r["eventAddr"], 16) - 0x7F0000000000
        i = g - t * exp["per"]
        if (t, i) in seen:
            bad("record %d/%d twice" % (t, i))
        seen.add((t, i))
        e = expected(exp, t, i)
        if not same(e, r):
            bad("record t=%d i=%d:\n  got  %s\n  want %s" % (t, i, r, e))
        if len(problems) > 5:
            return
    if tail:
        rank = [x for x in tail if x["recordType"] == "rank"][0]
        if rank["traceDropped"] != exp["dropped"]:
            bad("traceDropped %s, expected %s" % (rank["traceDropped"], exp["dropped"]))


def mode_count(recs, exp):
    check_meta(recs[0] if recs else None)
    body, tail = split_tail(recs)
    if exp.get("tail"):
        check_tail(tail)
    n = len([r for r in body if r is not None])
    if n != exp["records"]:
        bad("%d records, expected %d" % (n, exp["records"]))


def mode_tail(recs, exp):
    check_meta(recs[0] if recs else None)
    body, tail = split_tail(recs)
    got = check_tail(tail)
    if not got:
        return
    paths, rank = got
    clock = tail[-1] if tail[-1]["recordType"] == "clock" else None
    by_local = {p["local"]: p for p in paths}
    ntype = {}
    for r in body:
        if r and r["recordType"] == "event":
            ntype[r["type"]] = ntype.get(r["type"], 0) + 1
            if r["type"] != "ProfilerLifecycle" and r["path"] not in by_local:
                bad("event path %s has no path record" % r["path"])
    for typ, n in exp["events"].items():
        if ntype.get(typ, 0) != n:
            bad("%s: %d event records, expected %d" % (typ, ntype.get(typ, 0), n))
        calls = sum(p["calls"] for p in paths if p["leafType"] == typ)
        if typ != "ProfilerLifecycle" and calls != n:
            bad("%s: path calls %d, expected %d" % (typ, calls, n))
    for p in paths:
        want = exp["gid_base"] + p["local"] if exp.get("gid_base") is not None else None
        if p["id"] != want:
            bad("path %d id %s, expected %s" % (p["local"], p["id"], want))
    if rank["rank"] != exp["rank"] or rank["worldSize"] != exp["size"] or rank["pid"] != exp["pid"]:
        bad("rank record identity %s/%s/%s" % (rank["rank"], rank["worldSize"], rank["pid"]))
    if not rank["comms"] or rank["comms"][0]["commId"] != exp["commId"] \
            or rank["comms"][0]["commName"] != exp["commName"]:
        bad("rank comms %s" % rank["comms"])
    if exp.get("clock"):
        if not clock or clock["offsetNs"] != exp["clock"][0] or clock["rttNs"] != exp["clock"][1]:
            bad("clock record %s" % clock)
    elif clock:
        bad("unexpected clock record")


def mode_fields(recs, exp):
    check_meta(recs[0] if recs else None)
    by_addr = {}
    for r in recs:
        if r and r.get("recordType") == "event" and r.get("type") != "ProfilerLifecycle":
            if r.get("eventAddr") in by_addr:
                bad("two event lines with eventAddr %s" % r.get("eventAddr"))
            by_addr[r.get("eventAddr")] = r
    if len(by_addr) != len(exp["events"]):
        bad("%d event lines, expected %d" % (len(by_addr), len(exp["events"])))
    for e in exp["events"]:
        r = by_addr.get(e["eventAddr"])
        if r is None:
            bad("no event line for %s (%s)" % (e["eventAddr"], e["type"]))
            continue
        for k, v in e.items():
            got = r.get(k)
            if isinstance(v, dict) and k in ("start", "stop"):
                got = {kk: got.get(kk) for kk in v} if isinstance(got, dict) else got
            if got != v:
                bad("%s %s: %s is %r, expected %r" % (e["type"], e["eventAddr"], k, got, v))
        if e["isPxn"] and "ctx" in r and r["ctx"] is not None:
            bad("%s: a PXN event line carries ctx %r" % (e["type"], r["ctx"]))
        if r["stop"]["ts"] < r["start"]["ts"]:
            bad("%s: stop before start" % e["type"])


def main():
    mode, path, expf = sys.argv[1:4]
    with open(expf) as f:
        exp = json.load(f)
    recs = load(path)
    {"many": mode_many, "count": mode_count, "tail": mode_tail, "fields": mode_fields}[mode](recs, exp)
    for p in problems[:8]:
        print("# " + p.replace("\n", "\n# "))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
