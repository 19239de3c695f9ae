#!/usr/bin/env python3
"""compare_counts.py -- compare fields of an expectation with what collprof wrote.

usage: compare_counts.py [--subset] [--pxn-root] [--replay-expect] [--save S.json]
                         EXPECTED.json ACTUAL KEY...

ACTUAL is either a JSON summary or a collprof trace (*.jsonl), which is
summarized with trace_counts.py first (--save writes that summary).  Each KEY
is EKEY[=AKEY]: EKEY picks the field of EXPECTED ("." for the whole object,
as collprof-replay --expect writes it; dotted names go deeper), AKEY the
field of ACTUAL (default: EKEY).  Dicts ({path: count}) must hold the same
non-zero entries; with --subset only EXPECTED's keys are checked.
--pxn-root rewrites ACTUAL's path keys whose first element mentions PXN (any
case) to start with "@PXN", the generator's name for the PXN root element.

--replay-expect reads EXPECTED as collprof-replay --expect wrote it (and its
FILE.states and FILE.info) into {"paths", "path_states", "events", "states",
"lifecycle" (inits + finalizes), "records" (events + states + lifecycle),
"bad_lines": 0}.

Prints one line per KEY, "KEY ok" or "KEY FAIL: differences", and exits 1
when any KEY differs (so one process checks a whole case; test scripts turn
the lines into TAP results).
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trace_counts  # noqa: E402


def field(obj, key):
    if key == ".":
        return obj
    for k in key.split("."):
        obj = obj.get(k) if isinstance(obj, dict) else None
    return obj


def pxn_root(d):
    out = {}
    for k, v in d.items():
        parts = k.split("/")
        if re.search("pxn", parts[0], re.I):
            parts[0] = "@PXN"
        k2 = "/".join(parts)
        out[k2] = out.get(k2, 0) + v
    return out


def compare(e, a, subset, pxn):
    if isinstance(e, dict):
        a = a if isinstance(a, dict) else {}
        if pxn:
            a = pxn_root(a)
        e = {k: v for k, v in e.items() if v}
        a = {k: v for k, v in a.items() if v}
        keys = sorted(set(e) | (set() if subset else set(a)))
        return ["%s: expected %s, got %s" % (k, e.get(k), a.get(k))
                for k in keys if e.get(k) != a.get(k)]
    return [] if e == a else ["expected %r, got %r" % (e, a)]


def main():
    argv = sys.argv[1:]
    subset = "--subset" in argv
    pxn = "--pxn-root" in argv
    save = None
    if "--save" in argv:
        i = argv.index("--save")
        save = argv[i + 1]
        del argv[i:i + 2]
    args = [x for x in argv if not x.startswith("--")]
    exp_f, act_f, keyspecs = args[0], args[1], args[2:]
    exp = json.load(open(exp_f))
    if "--replay-expect" in argv:
        # collprof-replay --expect FILE: {"path":events}, FILE.states {"path":states}
        st = json.load(open(exp_f + ".states")) if os.path.exists(exp_f + ".states") else {}
        info = json.load(open(exp_f + ".info")) if os.path.exists(exp_f + ".info") else {}
        lc = info.get("inits", 0) + info.get("finis", 0)   # one lifecycle record each
        exp = {"paths": exp, "path_states": st, "events": sum(exp.values()),
               "states": sum(st.values()), "lifecycle": lc,
               "records": sum(exp.values()) + sum(st.values()) + lc, "bad_lines": 0}
    if act_f.endswith(".jsonl"):
        act = trace_counts.summarize(act_f)
        if save:
            with open(save, "w") as fh:
                json.dump(act, fh, sort_keys=True)
    else:
        act = json.load(open(act_f))
    failed = False
    for ks in keyspecs:
        ekey, _, akey = ks.partition("=")
        diffs = compare(field(exp, ekey), field(act, akey or ekey), subset, pxn)
        if diffs:
            failed = True
            print("%s FAIL: %s" % (ks, "; ".join(diffs[:8]) + (" ..." if len(diffs) > 8 else "")))
        else:
            print("%s ok" % ks)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
