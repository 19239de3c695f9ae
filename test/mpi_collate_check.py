#!/usr/bin/env python3
"""mpi_collate_check.py -- independent checks of a collated collprof run
(used by test/mpi_collate.t; shares no code with collprof).

  calls DIR NFILES ORACLE0.json ... : summary.json calls per path equal the
        sum over ranks r of oracle[r mod NFILES] (test/oracle.py output)
  ids DIR         : global ids agree in summary.json, summary.log, every
                    rank file's path records and any rank<R>.log
  lines DIR       : every line of every rank*.jsonl / pid*.jsonl parses
  collation DIR P : rounds == ceil(log2 P), ranks == P, nobody received
                    more than 3x the global set (+4 KiB)
  reduce DIR      : per path, nranks / min / max / ranks holding them equal
                    what the rank files' path records say
  collisions DIR BITS : hashes fit BITS, one id per distinct string,
                    hashCollisions = hash groups with several strings (> 0)
  same DIR1 DIR2  : summary.json equal except "collation" and run-end keys;
                    summary.log equal before its Collation section, except
                    the runtime and end-date lines
  runtime DIR1 DIR2 : run-end keys equal too
  counters DIR    : the run counters of summary.json (and of summary.log's
                    run summary) are the sums of the rank records' fields;
                    mask_frozen lists, per reason, exactly the ranks whose
                    rank record has that maskFrozen, and summary.log has
                    one "Event mask frozen on ..." line per reason
Exit 0 when the check holds, else 1 with the reasons on stdout.
"""
import glob
import json
import math
import os
import re
import sys

END_KEYS = ("runtime_ns", "runtimeRank", "endWall")


def load(d):
    return json.load(open(os.path.join(d, "summary.json")))


def rank_files(d):
    fs = glob.glob(os.path.join(d, "rank*.jsonl")) or glob.glob(os.path.join(d, "pid*.jsonl"))
    return sorted(fs)


def tail(f, late=False):
    """A rank file's path records (with late: also those of paths first
    seen after MPI_Finalize began, which carry no numbers) and its rank
    record."""
    paths, rank = [], None
    for line in open(f):
        if '"recordType":"path"' in line[:30]:
            p = json.loads(line)
            if late or not p.get("afterFinalize"):
                paths.append(p)
        elif '"recordType":"rank"' in line[:30]:
            rank = json.loads(line)
    return paths, rank


def fail(msgs):
    for m in msgs[:20]:
        print(m)
    return 1 if msgs else 0


def c_calls(d, nfiles, oracles):
    s = load(d)
    nranks = s["ranks"]
    want = {}
    for r in range(nranks):
        o = json.load(open(oracles[r % int(nfiles)]))
        for p, n in o["paths"].items():
            want[p] = want.get(p, 0) + n
    got = {p["path"]: p["calls"] for p in s["paths"]}
    msgs = []
    for p in sorted(set(want) | set(got)):
        if want.get(p) != got.get(p):
            msgs.append("%s: summary %s, captures %s" % (p, got.get(p), want.get(p)))
    return fail(msgs)


def c_ids(d):
    s = load(d)
    byid = {p["id"]: p["path"] for p in s["paths"]}
    msgs = []
    if sorted(byid) != list(range(len(s["paths"]))):
        msgs.append("ids are not 0..n-1")
    log = open(os.path.join(d, "summary.log")).read()
    sect = log.split("\nGlobal paths (", 1)
    if len(sect) < 2:
        msgs.append("summary.log has no Global paths section")
    else:
        seen = 0
        for line in sect[1].splitlines()[1:]:
            m = re.match(r"\s+ID(\d+)\s+0x[0-9a-f]{16}\s+(.*)$", line)
            if not m:
                break
            seen += 1
            if byid.get(int(m.group(1))) != m.group(2):
                msgs.append("summary.log ID%s = %s, json %s" % (m.group(1), m.group(2), byid.get(int(m.group(1)))))
        if seen != len(byid):
            msgs.append("summary.log lists %d paths, json %d" % (seen, len(byid)))
    prof = log.split("Runtime profile", 1)[1].split("\n\n", 1)[0].splitlines()[3:]
    for line in prof:
        cols = [c.strip() for c in line.split("|")]
        if byid.get(int(cols[-1])) != cols[-2]:
            msgs.append("profile row %s: %s vs %s" % (cols[-1], cols[-2], byid.get(int(cols[-1]))))
    for f in rank_files(d):
        paths, _ = tail(f, late=True)
        for p in paths:
            if p.get("afterFinalize"):   # first seen after MPI_Finalize began: no global id
                if p["id"] is not None:
                    msgs.append("%s: afterFinalize path %s has id %s" % (f, p["path"], p["id"]))
                continue
            if p["id"] is None or byid.get(p["id"]) != p["path"]:
                msgs.append("%s: id %s for %s (summary: %s)" % (f, p["id"], p["path"], byid.get(p["id"])))
    for f in glob.glob(os.path.join(d, "rank*.log")):
        for line in open(f):
            cols = [c.strip() for c in line.split("|")]
            if len(cols) > 5 and cols[-1].isdigit():
                if byid.get(int(cols[-1])) != cols[-2]:
                    msgs.append("%s: ID %s is %s, summary %s" % (f, cols[-1], cols[-2], byid.get(int(cols[-1]))))
    return fail(msgs)


def c_lines(d):
    msgs, n = [], 0
    for f in rank_files(d):
        for i, line in enumerate(open(f), 1):
            n += 1
            try:
                json.loads(line)
            except ValueError as e:
                msgs.append("%s:%d: %s" % (f, i, e))
    if not n:
        msgs.append("no lines")
    return fail(msgs)


def c_collation(d, p):
    c = load(d)["collation"]
    p = int(p)
    msgs = []
    want = math.ceil(math.log2(p)) if p > 1 else 0
    if c["mode"] != "online":
        msgs.append("mode %s" % c["mode"])
    if c["rounds"] != want:
        msgs.append("rounds %d, want %d" % (c["rounds"], want))
    if c["ranks"] != p:
        msgs.append("ranks %d" % c["ranks"])
    if c["max_recv_bytes"] > 3 * c["global_set_bytes"] + 4096:
        msgs.append("largest receive %d > 3 x global set %d" % (c["max_recv_bytes"], c["global_set_bytes"]))
    if len(c.get("bytes_recv", [])) != p or max(c["bytes_recv"]) != c["max_recv_bytes"]:
        msgs.append("bytes_recv per rank missing or inconsistent")
    return fail(msgs)


def ranked_tails(d, with_record=False):
    """(rank, paths) per file (with_record: (rank, paths, rank record));
    files without a rank (pid files) get ranks after the highest known one,
    in the order of the number in their name."""
    fs = sorted(rank_files(d), key=lambda f: int(re.sub(r"\D", "", os.path.basename(f)) or 0))
    out, top = [], -1
    for f in fs:
        paths, rank = tail(f)
        r = rank["rank"] if rank else -1
        top = max(top, r)
        out.append([r, paths, rank])
    for o in out:
        if o[0] < 0:
            top += 1
            o[0] = top
    return out if with_record else [o[:2] for o in out]


def c_reduce(d):
    s = load(d)
    per = {}
    for rank, paths in ranked_tails(d):
        for p in paths:
            per.setdefault(p["path"], []).append((p["total_ns"], rank, p["calls"]))
    msgs = []
    for p in s["paths"]:
        h = per.get(p["path"], [])
        if p["nranks"] != len(h):
            msgs.append("%s: nranks %d, files %d" % (p["path"], p["nranks"], len(h)))
            continue
        mn = min(h, key=lambda x: (x[0], x[1]))
        mx = max(h, key=lambda x: (x[0], -x[1]))
        if (p["min_ns"], p["min_rank"]) != mn[:2] or (p["max_ns"], p["max_rank"]) != mx[:2]:
            msgs.append("%s: min %s@%s max %s@%s, files %s %s" % (p["path"], p["min_ns"], p["min_rank"],
                                                                 p["max_ns"], p["max_rank"], mn[:2], mx[:2]))
        tot = sum(x[0] for x in h)
        if p["total_ns"] != tot or abs(p["avg_ns"] - tot / len(h)) > 1e-3 * max(1, tot / len(h)):
            msgs.append("%s: total/avg %s %s, files %s" % (p["path"], p["total_ns"], p["avg_ns"], tot))
        avg = tot / len(h)
        if avg > 0:
            dmax, dmin = mx[0] - avg, avg - mn[0]
            imb = 100 * dmax / avg if dmax >= dmin else -100 * dmin / avg
            if abs(imb - p["imbalance_pct"]) > 1e-3:
                msgs.append("%s: imbalance %s, want %s" % (p["path"], p["imbalance_pct"], imb))
    return fail(msgs)


def c_collisions(d, bits):
    s = load(d)
    bits = int(bits)
    msgs = []
    groups = {}
    for p in s["paths"]:
        h = int(p["hash"], 16)
        if h >> bits:
            msgs.append("hash %s wider than %d bits" % (p["hash"], bits))
        groups.setdefault(h, set()).add(p["path"])
    strings = [p["path"] for p in s["paths"]]
    if len(strings) != len(set(strings)):
        msgs.append("a path string has two ids")
    want = sum(1 for g in groups.values() if len(g) > 1)
    if s["hashCollisions"] != want or want == 0:
        msgs.append("hashCollisions %d, hash groups with several paths %d" % (s["hashCollisions"], want))
    return fail(msgs)


def strip_log(d, keep_end):
    out = []
    for line in open(os.path.join(d, "summary.log")):
        if line.startswith("Collation"):
            break
        if not keep_end and (line.startswith("End date") or "Runtime [s]" in line):
            continue
        out.append(line)
    return out


def c_same(d1, d2, with_end=False):
    a, b = load(d1), load(d2)
    msgs = []
    for k in sorted(set(a) | set(b)):
        if k == "collation" or (not with_end and k in END_KEYS):
            continue
        if a.get(k) != b.get(k):
            x, y = a.get(k), b.get(k)
            if k == "paths" and isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
                # the first path that differs, and its keys that differ
                for p, q in zip(x, y):
                    if p != q:
                        keys = sorted(j for j in set(p) | set(q) if p.get(j) != q.get(j))
                        msgs.append("summary.json path %s: %s" % (p.get("path"), "; ".join(
                            "%s %s | %s" % (j, str(p.get(j))[:300], str(q.get(j))[:300]) for j in keys)))
                        break
                continue
            msgs.append("summary.json %s: %s | %s" % (k, str(x)[:200], str(y)[:200]))
    la, lb = strip_log(d1, with_end), strip_log(d2, with_end)
    for x, y in zip(la, lb):
        if x != y:
            msgs.append("summary.log:\n< %s> %s" % (x, y))
    if len(la) != len(lb):
        msgs.append("summary.log lengths %d %d" % (len(la), len(lb)))
    return fail(msgs)


# rank record key -> summary.json key (summed over ranks)
COUNTERS = {"eventsRecorded": "events_recorded", "eventsPxn": "events_pxn",
            "unterminated": "unterminated", "blacklistEvictions": "blacklist_evictions",
            "unknownParent": "unknown_parent", "traceDropped": "trace_dropped",
            "badCalls": "bad_calls", "gpuSampledCalls": "gpu_sampled_calls",
            "gpuSamplesDropped": "gpu_samples_dropped", "gpuSamplesDeferred": "gpu_samples_deferred"}
# summary.log run-summary label -> summary.json key
LOG_COUNTERS = {"Events recorded": "events_recorded", "Bad calls": "bad_calls",
                "GPU-sampled API calls": "gpu_sampled_calls",
                "GPU samples dropped": "gpu_samples_dropped",
                "GPU samples skipped": "gpu_samples_deferred"}


def ranges_text(ranks):
    """[0,1,2,5] -> "0-2,5" """
    out, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        out.append(str(ranks[i]) if i == j else "%d-%d" % (ranks[i], ranks[j]))
        i = j + 1
    return ",".join(out)


def c_counters(d):
    s = load(d)
    recs = [dict(rec, rank=rank) for rank, _, rec in ranked_tails(d, True) if rec]
    msgs = []
    if not recs:
        msgs.append("no rank records")
    for rk, sk in COUNTERS.items():
        want = sum(r.get(rk, 0) for r in recs)
        if s.get(sk) != want:
            msgs.append("summary.json %s %s, rank records sum %s" % (sk, s.get(sk), want))
    frozen = {}
    for r in recs:
        if r.get("maskFrozen"):
            frozen.setdefault(r["maskFrozen"], []).append(r["rank"])
    want = sorted(({"reason": k, "nranks": len(v), "ranks": sorted(v)} for k, v in frozen.items()),
                  key=lambda g: (g["ranks"][0], g["reason"]))
    if s.get("mask_frozen") != want:
        msgs.append("summary.json mask_frozen %s, rank records %s" % (s.get("mask_frozen"), want))
    log = open(os.path.join(d, "summary.log")).read()
    run = log.split("\nRun summary\n", 1)[-1].split("\n\n", 1)[0].splitlines()
    for label, sk in LOG_COUNTERS.items():
        got = [l for l in run if l.startswith("  %s:" % label)]
        m = re.match(r"\s+[^:]+:\s+(\d+)", got[0]) if len(got) == 1 else None
        if not m or int(m.group(1)) != s.get(sk):
            msgs.append("summary.log %r: %s, summary.json %s" % (label, got, s.get(sk)))
    lines = [l for l in run if l.startswith("  Event mask frozen on ")]
    wl = ["  Event mask frozen on %s %s: %s (" % ("rank" if g["nranks"] == 1 else "ranks",
                                               ranges_text(g["ranks"]), g["reason"]) for g in want]
    if len(lines) != len(wl) or any(not l.startswith(w) for l, w in zip(lines, wl)):
        msgs.append("summary.log frozen lines %s, want %s" % (lines, wl))
    return fail(msgs)


def last_block(f):
    """The path records of a rank file's last tail block (a rank record
    ends a block; a path record after one starts the next), and every
    event record's local path id with its count."""
    block, closed, refs = {}, False, {}
    for line in open(f):
        o = json.loads(line)
        t = o.get("recordType")
        if t == "path":
            if closed:
                block, closed = {}, False
            block[o["local"]] = o
        elif t == "rank":
            closed = True
        elif t == "event" and o.get("path") is not None:
            refs[o["path"]] = refs.get(o["path"], 0) + 1
    return block, refs


def c_pathrefs(d, chrome=None):
    """Every event record names a path its file lists; paths first seen
    after MPI_Finalize began are listed apart (afterFinalize, no id, local
    ids after the run's); at least one event is on such a path (else the
    case tests nothing); in the Chrome export every event is named."""
    msgs, late_refs = [], 0
    for f in rank_files(d):
        block, refs = last_block(f)
        run = [k for k, p in block.items() if not p.get("afterFinalize")]
        late = [k for k, p in block.items() if p.get("afterFinalize")]
        for k in late:
            if block[k]["id"] is not None:
                msgs.append("%s: afterFinalize path %d has id %s" % (f, k, block[k]["id"]))
        if late and run and min(late) <= max(run):
            msgs.append("%s: afterFinalize local ids from %d, the run's up to %d" % (f, min(late), max(run)))
        missing = sorted(k for k in refs if k not in block)
        if missing:
            msgs.append("%s: %d events name %d paths the file does not list (%s...)"
                        % (f, sum(refs[k] for k in missing), len(missing), missing[:5]))
        late_refs += sum(refs.get(k, 0) for k in late)
    if not late_refs:
        msgs.append("no event on a path first seen after MPI_Finalize: the case tests nothing")
    if chrome:
        unnamed = [e for e in json.load(open(chrome))["traceEvents"]
                   if e.get("ph") == "X" and e.get("args", {}).get("localPath") is not None
                   and "path" not in e["args"]]
        if unnamed:
            msgs.append("%s: %d events without a path name, e.g. %s" % (chrome, len(unnamed), unnamed[0]))
    return fail(msgs)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "calls":
        return c_calls(args[0], args[1], args[2:])
    if cmd == "runtime":
        return c_same(args[0], args[1], True)
    return {"ids": c_ids, "lines": c_lines, "collation": c_collation, "reduce": c_reduce,
            "collisions": c_collisions, "same": c_same, "counters": c_counters,
            "pathrefs": c_pathrefs}[cmd](*args)


if __name__ == "__main__":
    sys.exit(main())
