#!/bin/bash
# one_rank.t — communicators of one rank.  NCCL 2.28 runs their calls as a
# local copy before any profiler event (enqueue.cc, taskAppend:
# ncclLaunchOneRank; send/recv to self likewise): on one H200 the test
# app's calls on one rank gave collprof no event at all (test/gpu/run.sh 1).
# So collprof must say why such a profile is empty.  A real capture (the
# ar_nvlink 2-rank communicator) is replayed with two one-rank
# communicators initialized beside it, as NCCL inits them, without events:
# one stderr line for the process, the two marked in summary.log,
# summary.json and the HTML report, the 2-rank communicator's profile as
# without them; and with the one-rank communicators alone, summary.log
# does not claim a start-delay decision that needs a first NCCL event.
. "$(dirname "$0")/tap.sh"
need_replay_collate
plan 9
F=$FIX/ar_nvlink/p0.jsonl
# the capture with the one-rank communicators' init (after the first init)
# and finalize (before the last line, the 2-rank finalize)
python3 - "$F" "$T/solo.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
first, last = json.loads(lines[0]), json.loads(lines[-1])
extra_init, extra_fini = [], []
for i, name in enumerate(("solo", "solo2")):
    ctx = "0x7000%04x" % (i + 1)
    extra_init.append(json.dumps({"cb": "init", "t": first["t"] + 1 + i, "pid": first["pid"], "tid": first["tid"],
                                  "ctx": ctx, "commId": str(1000 + i), "commName": name, "nNodes": 1,
                                  "nranks": 1, "rank": 0, "maskIn": 0, "mask": first["mask"]}))
    extra_fini.append(json.dumps({"cb": "fini", "t": last["t"] - 2 + i, "tid": last["tid"], "ctx": ctx}))
open(sys.argv[2], "w").write("\n".join(lines[:1] + extra_init + lines[1:-1] + extra_fini + lines[-1:]) + "\n")
PY
mkdir -p "$T/plain" "$T/solo"
COLLPROF_OUTPUT_DIR="$T/plain" "$REPLAY" --no-mpi "$F" 2>"$T/plain.err"
COLLPROF_OUTPUT_DIR="$T/solo" "$REPLAY" --no-mpi "$T/solo.jsonl" 2>"$T/solo.err"
is "$(grep -c 'has one rank: NCCL sends no profiler event' "$T/solo.err")" "1" \
  "one stderr line for the process's one-rank communicators"
ok "it names the first of them" grep -q 'communicator "solo" has one rank' "$T/solo.err"
is "$(grep -c 'has one rank' "$T/plain.err")" "0" "no such line without one"
"$COLLATE" -q "$T/plain" && "$COLLATE" -q --html "$T/solo.html" "$T/solo"
is "$(grep -cE '^ +100[01] \| solo2? .* \*$' "$T/solo/summary.log")" "2" "summary.log marks both one-rank communicators"
ok "the HTML report names them as not profiled" \
  grep -q 'not profiled</span><b>solo, solo2 (one rank: NCCL sends no profiler event' "$T/solo.html"
ok "summary.log says what the mark means" grep -q '^  \* one rank: NCCL sends no profiler event for its calls' "$T/solo/summary.log"
# the start delay by its default rule (auto; tap.sh sets 0 for replays)
d=$T/only; mkdir -p "$d"
python3 - "$T/solo.jsonl" "$d/only.jsonl" <<'PY'
import json, sys
keep = [l for l in open(sys.argv[1]) if json.loads(l)["cb"] in ("init", "fini") and json.loads(l).get("nranks", 1) == 1
        and json.loads(l)["ctx"].startswith("0x7000")]
open(sys.argv[2], "w").writelines(keep)
PY
env -u COLLPROF_GPU_SAMPLE_DELAY_MS COLLPROF_OUTPUT_DIR="$d/prof" "$REPLAY" --no-mpi "$d/only.jsonl" 2>/dev/null && "$COLLATE" -q "$d/prof"
ok "one-rank communicators alone: the start delay's rule is said not to have run" \
  grep -q 'COLLPROF_GPU_SAMPLE_DELAY_MS: auto (not decided: no NCCL event came)' "$d/prof/summary.log"
ok "summary.log has neither without them" bash -c "! grep -q 'one rank: NCCL' '$T/plain/summary.log'"
is "$(python3 - "$T/plain/summary.json" "$T/solo/summary.json" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
calls = lambda s: sorted((p["path"], p["calls"], p.get("bytes", 0)) for p in s["paths"])
un = sorted(c["commName"] for c in b["comms"] if "unprofiled" in c)
print("same" if calls(a) == calls(b) else "paths differ", un, [c["commName"] for c in a["comms"] if "unprofiled" in c])
PY
)" "same ['solo', 'solo2'] []" "summary.json: the paths as without them, both one-rank communicators marked unprofiled"
