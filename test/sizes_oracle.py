#!/usr/bin/env python3
"""sizes_oracle.py — checks collprof-collate --sizes (collate/export_sizes.c)
against the run's other outputs, sharing no code with it.

  sizes_oracle.py RUNDIR SIZESFILE summary [sampled]   per path: calls and
      samples summed over the classes = summary.json's, and its "sizes"
      (online: carried up the MPI tree) the table's rows; where no class has
      "-", the classes' GPU[s] add up to the summary's GPU estimate; per
      class, GPU[s], Outliers, Borrowed and GPU/call as summed from the rank
      files' gpuSizes, each rank's own estimate of the class (whose rule
      gpu_estimate_oracle.py checks): "-" where a rank's estimate covers
      fewer calls than it has (with "sampled": at least one class has calls
      without a sample and periodic samples, so that the estimate is
      tested)
  sizes_oracle.py RUNDIR SIZESFILE trace [gpu]   from the rank files'
      event records (needs every call traced): per path and log2 size class
      (bytes = count x datatype size), the Coll/P2p calls; with "gpu"
      (every call sampled) also the samples, each call's GPU time (its
      KernelCh's latest gpuStop - earliest gpuStart), GPU/call as the mean
      over ranks (a rank with every call of the class sampled has its exact
      sum and no outlier; one without, its longest left out when over 10x
      the mean of its others), and AlgBW/BusBW from it at the class's
      smallest size with nccl-tests' factors

Prints "ok N paths, M classes" or the differences (exit 1).
"""
import glob
import json
import os
import re
import sys

DT = {"ncclInt8": 1, "ncclUint8": 1, "ncclInt32": 4, "ncclUint32": 4, "ncclInt64": 8, "ncclUint64": 8,
      "ncclFloat16": 2, "ncclFloat32": 4, "ncclFloat64": 8, "ncclBfloat16": 2,
      "ncclFloat8e4m3": 1, "ncclFloat8e5m2": 1}
UNIT = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def parse(fname):
    """{path: {lo: row}} from the table; lo 0 for "unsized"."""
    out, cur = {}, None
    for line in open(fname):
        m = re.match(r"ID (\d+)  (.*)$", line)
        if m:
            cur = out.setdefault(m.group(2), {})
            continue
        cols = [c.strip() for c in line.split("|")]
        if cur is None or len(cols) != 10 or cols[0] == "Size":
            continue
        if cols[0] == "unsized":
            lo = 0
        else:
            n, u = cols[0].split()
            lo = int(n) * UNIT[u]

        def num(x, f=float):
            return None if x == "-" else f(x)
        cur[lo] = dict(calls=int(cols[1]), samples=int(cols[2]), first=int(cols[3]), outliers=int(cols[4]),
                       lent=int(cols[5]), gpu_s=num(cols[6]), per_us=num(cols[7]), alg=num(cols[8]), bus=num(cols[9]))
    return out


def files(d):
    return sorted(glob.glob(os.path.join(d, "rank*.jsonl"))) or sorted(glob.glob(os.path.join(d, "pid*.jsonl")))


def rank_sizes(d):
    """{path: {lo: [gpuSizes entry per rank]}} from the rank files' last
    block of path records (a rank record ends a block)."""
    res = {}
    for f in files(d):
        block, closed = {}, False
        for line in open(f):
            if '"recordType":"path"' in line[:30]:
                if closed:
                    block, closed = {}, False
                r = json.loads(line)
                block[r["local"]] = r
            elif '"recordType":"rank"' in line[:30]:
                closed = True
        for r in block.values():
            if r.get("afterFinalize") or r["leafType"] not in ("ncclProfileColl", "ncclProfileP2p"):
                continue
            for e in r.get("gpuSizes", []):
                lo = 0 if e[0] == 0 else 1 << (e[0].bit_length() - 1)
                res.setdefault(r["path"], {}).setdefault(lo, []).append(e)
    return res


def class_sums(entries):
    """The ranks' own estimates of a class added up: GPU ns (None where a
    rank's covers fewer calls than it has), outliers, lent calls, and the
    periodic samples but the outliers (count, ns)."""
    tot, out, lent, pn, pns = 0, 0, 0, 0, 0
    for e in entries:
        _lo, calls, s, sf, ns, fns, _mx, est, covered, o, ons, ln = e
        if tot is not None:
            tot = tot + est if covered >= calls else None
        out, lent = out + o, lent + ln
        pn, pns = pn + s - sf - o, pns + ns - fns - ons
    return tot, out, lent, pn, pns


def c_summary(d, table, sampled_run=False):
    s = json.load(open(os.path.join(d, "summary.json")))
    by = {p["path"]: p for p in s["paths"]}
    msgs, ncls = [], 0
    for path, rows in table.items():
        p = by.get(path)
        if not p:
            msgs.append("%s: not in summary.json" % path)
            continue
        ncls += len(rows)
        calls = sum(r["calls"] for r in rows.values())
        samples = sum(r["samples"] for r in rows.values())
        if calls != p["calls"] or samples != p["gpu_samples"]:
            msgs.append("%s: calls %d samples %d, summary %d %d" % (path, calls, samples, p["calls"], p["gpu_samples"]))
        if all(r["gpu_s"] is not None for r in rows.values()):
            g = sum(r["gpu_s"] for r in rows.values())
            if abs(g - p["gpu_est_ns"] / 1e9) > 5.1e-7 * len(rows):
                msgs.append("%s: GPU[s] add up to %.6f, summary %.9f" % (path, g, p["gpu_est_ns"] / 1e9))
    # the summary's own classes (online: carried up the MPI tree) = the
    # table's (collated from the rank files)
    for path, rows in table.items():
        got = {c["bytes"]: c for c in by.get(path, {}).get("sizes", [])}
        if set(got) != set(rows):
            msgs.append("%s: summary.json sizes %s, table %s" % (path, sorted(got), sorted(rows)))
            continue
        for lo, r in rows.items():
            c = got[lo]
            same = (c["calls"], c["samples"], c["firstSamples"], c["outliers"], c["borrowedCalls"]) == \
                (r["calls"], r["samples"], r["first"], r["outliers"], r["lent"])
            g = c["gpuNs"]
            same = same and (g is None) == (r["gpu_s"] is None) and (g is None or abs(g / 1e9 - r["gpu_s"]) <= 5.1e-7)
            if not same:
                msgs.append("%s, %d B: summary.json %s, table %s" % (path, lo, c, r))
    own, partial = rank_sizes(d), 0
    for path, rows in table.items():
        for lo, r in rows.items():
            ents = own.get(path, {}).get(lo, [])
            g, out, lent, pn, pns = class_sums(ents)
            partial += g is not None and any(e[2] < e[1] and e[2] > e[3] for e in ents)
            if (g is None) != (r["gpu_s"] is None) or (g is not None and abs(g / 1e9 - r["gpu_s"]) > 5.1e-7):
                msgs.append("%s, %d B: GPU[s] %s, from the rank files' gpuSizes %s" % (path, lo, r["gpu_s"], g))
            per = pns / pn / 1e3 if pn else None
            if (out, lent) != (r["outliers"], r["lent"]) or (per is None) != (r["per_us"] is None) or (
                    per is not None and abs(per - r["per_us"]) > 6e-4):
                msgs.append("%s, %d B: outliers %d lent %d GPU/call %s, rank files %d %d %s" % (
                    path, lo, r["outliers"], r["lent"], r["per_us"], out, lent, per))
    if sampled_run and not partial:
        msgs.append("no class with unsampled calls and periodic samples: the estimate is not tested")
    want = [p["path"] for p in s["paths"] if p.get("gpu_samples") and p["leafType"] in ("ncclProfileColl", "ncclProfileP2p")]
    for path in want:
        if path not in table:
            msgs.append("%s: sampled in summary.json, not in the table" % path)
    return msgs, len(table), ncls


def trace_calls(d):
    """{path: {lo: [(rank file, gpu ns or None), ...]}} from the event records."""
    res = {}
    for f in files(d):
        names, colls, kcs = {}, {}, []
        for line in open(f):
            r = json.loads(line)
            t = r.get("recordType")
            if t == "path":
                names[r["local"]] = r["path"]
            elif t == "event" and r["type"] in ("ncclProfileColl", "ncclProfileP2p"):
                colls.setdefault(r["eventAddr"], []).append(r)
            elif t == "event" and r["type"] == "ncclProfileKernelCh":
                kcs.append(r)
        span = {}
        for k in kcs:   # its Coll: the latest of that handle started before it
            cands = [c for c in colls.get(k["parentObj"], []) if c["start"]["ts"] <= k["start"]["ts"]]
            if not cands:
                continue
            c = max(cands, key=lambda c: c["start"]["ts"])
            g = span.setdefault(id(c), [None, None])
            a, b = k["details"]["gpuStart"], k["details"]["gpuStop"]
            g[0] = a if g[0] is None else min(g[0], a)
            g[1] = b if g[1] is None else max(g[1], b)
        for lst in colls.values():
            for c in lst:
                det = c.get("details", {})
                nbytes = int(det.get("count", 0)) * DT.get(det.get("datatype"), 0)
                lo = 0 if nbytes == 0 else 1 << (nbytes.bit_length() - 1)
                g = span.get(id(c))
                res.setdefault(names[c["path"]], {}).setdefault(lo, []).append(
                    (f, g[1] - g[0] if g and g[1] >= g[0] else None))
    return res


def c_trace(d, table, gpu):
    s = json.load(open(os.path.join(d, "summary.json")))
    n = s.get("bw_nranks") or max((c["nranks"] for c in s.get("communicators", s.get("comms", []))), default=0)
    leaf = {p["path"]: p for p in s["paths"]}
    got = trace_calls(d)
    msgs, ncls = [], 0
    for path in sorted(set(got) | set(table)):
        t, o = table.get(path, {}), got.get(path, {})
        for lo in sorted(set(t) | set(o)):
            ncls += 1
            row, calls = t.get(lo), o.get(lo, [])
            if not row or row["calls"] != len(calls):
                msgs.append("%s, %d B: calls %s, trace %d" % (path, lo, row and row["calls"], len(calls)))
                continue
            if not gpu:
                continue
            sampled = [x for x in calls if x[1] is not None]
            if row["samples"] != len(sampled):
                msgs.append("%s, %d B: samples %d, trace %d" % (path, lo, row["samples"], len(sampled)))
                continue
            kept, outl = [], 0
            for f in sorted({x[0] for x in sampled}):
                v = [x[1] for x in sampled if x[0] == f]
                m = max(v)
                every = len(v) >= sum(1 for x in calls if x[0] == f)
                if not every and len(v) >= 2 and m > 10.0 * (sum(v) - m) / (len(v) - 1):
                    v.remove(m)
                    outl += 1
                kept += v
            if row["outliers"] != outl:
                msgs.append("%s, %d B: outliers %d, trace %d" % (path, lo, row["outliers"], outl))
            mean = sum(kept) / len(kept) if kept else None
            if (mean is None) != (row["per_us"] is None) or (mean is not None and abs(mean / 1e3 - row["per_us"]) > 6e-4):
                msgs.append("%s, %d B: GPU/call %s us, trace %s" % (path, lo, row["per_us"], mean and mean / 1e3))
                continue
            if mean and lo:
                func = leaf[path]["leafFunc"]
                mult, fac = 1.0, 1.0
                if leaf[path]["leafType"] == "ncclProfileColl":
                    if func.startswith("AllReduce"):
                        fac = 2.0 * (n - 1) / n
                    elif func.startswith(("AllGather", "ReduceScatter")):
                        mult, fac = n, (n - 1) / n
                alg = lo * mult / mean
                for k, v in (("alg", alg), ("bus", alg * fac)):
                    if row[k] is None or abs(row[k] - v) > 6e-4 + 1e-6 * v:
                        msgs.append("%s, %d B: %s %s GB/s, trace %.4f" % (path, lo, k, row[k], v))
    return msgs, len(got), ncls


def main():
    d, fname, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    table = parse(fname)
    if mode == "summary":
        msgs, npaths, ncls = c_summary(d, table, len(sys.argv) > 4 and sys.argv[4] == "sampled")
    else:
        msgs, npaths, ncls = c_trace(d, table, len(sys.argv) > 4 and sys.argv[4] == "gpu")
    if not npaths or not ncls:
        msgs.append("no path or no class: nothing checked")
    if msgs:
        print("\n".join(msgs[:20]))
        return 1
    print("ok %d paths, %d classes" % (npaths, ncls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
