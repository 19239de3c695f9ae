#!/bin/bash
# launch_timer.t — CUDA events around sampled kernel launches
# (src/launch_timer.h), on CPU: captures replayed through libcollprof.so
# with a stand-in libcuda.so.1 (test/fakecuda/fake_cuda.c, whose stream
# clocks advance one step per event record).  Checked against
# launch_timer_oracle.py, which applies the rule to the capture: launches
# timed and not attributed (rank record), periodic launches per Coll/P2p
# op (path records gpu_launch_samples), every time exactly one step
# (gpu_launch_ns, gpuLaunch trace records); then a stream being captured
# (nothing timed), launches that never complete (64 slots, the rest
# skipped, finalize gives up after its wait), failing event records, no
# CUDA driver at all, and the collated summary.
. "$(dirname "$0")/tap.sh"
REPLAY=$BIN/collprof-replay
PLUGIN=$LIB/libcollprof.so
FAKE=$LIB/fakecuda
[ -x "$REPLAY" ] && [ -e "$PLUGIN" ] || skip_all "collprof-replay or libcollprof.so not built"
[ -e "$FAKE/libcuda.so.1" ] || skip_all "fake libcuda.so.1 not built"
command -v python3 >/dev/null || skip_all "no python3"
STEP=1500

# replay CAPTURE OUTDIR [VAR=VALUE...]: the capture through the plugin with
# the fake driver, as fast as it goes, so with no least interval between
# timed launches (COLLPROF_LAUNCH_INTERVAL_US=0) unless one is given, and
# single timed launches (COLLPROF_LAUNCH_RUN=1, not the default 8) unless
# a run length is given or LT_RUN1 is set empty, and calls of every size
# timed (COLLPROF_LAUNCH_MIN_BYTES=0, not the default 64 KiB) unless a
# least size is given or LT_MIN0 is set empty
replay() {
  local cap=$1 out=$2
  shift 2
  env -u NCCL_PROFILE_EVENT_MASK LD_LIBRARY_PATH="$FAKE${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    FAKECUDA_STEP_NS=$STEP COLLPROF_OUTPUT_DIR="$out" COLLPROF_QUIET=1 COLLPROF_LAUNCH_INTERVAL_US=0 \
    ${LT_RUN1-COLLPROF_LAUNCH_RUN=1} ${LT_MIN0-COLLPROF_LAUNCH_MIN_BYTES=0} "$@" \
    "$REPLAY" --no-mpi --plugin "$PLUGIN" "$cap" >"$T/log" 2>&1
}

# view OUTDIR: what the rank file says, in the oracle's terms, plus the
# consistency of times and trace records ("times":"ok" or what is wrong)
view() {
  python3 - "$1" "$STEP" <<'PY'
import glob, json, os, sys
step = int(sys.argv[2])
out, ops, bad, nrec, nidle = {}, {}, [], 0, 0
short = {"ncclProfileColl": "Coll", "ncclProfileP2p": "P2p"}
for f in glob.glob(os.path.join(sys.argv[1], "*.jsonl")):
    paths, spans = {}, {}   # spans: local path -> its records in the per-path numbers
    for line in open(f):
        r = json.loads(line)
        t = r.get("recordType")
        if t == "rank":
            out = {"timed": r["gpuLaunchesTimed"], "unattributed": r["gpuLaunchesUnattributed"],
                   "skipped": r["gpuLaunchesSkipped"], "unread": r["gpuLaunchesUnread"],
                   "idle": r["gpuLaunchesIdle"]}
        elif t == "path":
            paths[r["local"]] = r
        elif t == "gpuLaunch":
            nrec += 1
            if abs(r["gpuDuration"] * 1000 - step) > 1:
                bad.append("gpuDuration %s" % r["gpuDuration"])
            # attributed: one op per launch, not split (a run of mixed sizes is not)
            if r["eventAddr"] is not None and (r["ops"] != r["launches"] or r["split"]):
                bad.append("eventAddr %s with ops %s" % (r["eventAddr"], r["ops"]))
            if r["eventAddr"] is None and r["ops"] == 1 and r["launches"] == 1 and not r["split"]:
                bad.append("no eventAddr with one op")
            nidle += r["idle"] * r["launches"]
            if r["eventAddr"] is not None and not r["first"] and not r["idle"]:
                spans[r["path"]] = spans.get(r["path"], 0) + 1
    for p in paths.values():
        s = p.get("gpu_launch_samples", 0)
        if s:
            k = "%s:%s" % (short.get(p["leafType"], p["leafType"]), p["leafFunc"])
            ops[k] = ops.get(k, 0) + s
            # a run's span is one step (two event records) whatever it holds
            if p["gpu_launch_ns"] != spans.get(p["local"], 0) * step:
                bad.append("%s: gpu_launch_ns %d for %d records" % (k, p["gpu_launch_ns"], spans.get(p["local"], 0)))
out["ops"] = dict(sorted(ops.items()))
out["records"] = nrec
if nidle != out.get("idle"):
    bad.append("%d idle records, rank record %s" % (nidle, out.get("idle")))
out["times"] = "ok" if not bad else "; ".join(bad[:3])
print(json.dumps(out, sort_keys=True))
PY
}

want() {   # the oracle's answer with the fields view adds for a clean run
  python3 - "$(python3 "$TOP/test/launch_timer_oracle.py" "$@")" <<'PY'
import json, sys
w = json.loads(sys.argv[1])
w.setdefault("idle", 0)
w.update({"unread": 0, "times": "ok"})
print(json.dumps(w, sort_keys=True))
PY
}

for sc in ar_nvlink sendrecv ar_grouped ar4_threads; do
  cap=$FIX/$sc/p0.jsonl
  [ -s "$cap" ] || { skip "$sc: no capture"; continue; }
  for n in 1 4 16; do
    replay "$cap" "$T/$sc.$n" COLLPROF_LAUNCH_SAMPLE=$n
    is "$(view "$T/$sc.$n")" "$(want "$cap" "$n")" \
      "$sc, COLLPROF_LAUNCH_SAMPLE=$n: launches timed, not attributed, per op; each one step; one trace record each"
  done
done

# Small calls (COLLPROF_LAUNCH_MIN_BYTES, launch_timer.h): only the
# launches of calls of that many bytes or more are timed or counted towards
# the next timed one; the default is 64 KiB.  Single launches and runs of 4.
for sc in ar_nvlink sendrecv ar_grouped ar4_threads; do
  cap=$FIX/$sc/p0.jsonl
  [ -s "$cap" ] || { skip "$sc: no capture"; skip "$sc: no capture"; continue; }
  LT_MIN0= replay "$cap" "$T/$sc.m64k" COLLPROF_LAUNCH_SAMPLE=4
  is "$(view "$T/$sc.m64k")" "$(want "$cap" 4 min=65536)" \
    "$sc, COLLPROF_LAUNCH_SAMPLE=4 and the default least size (64 KiB): the small calls' launches left out"
  replay "$cap" "$T/$sc.m4k" COLLPROF_LAUNCH_SAMPLE=2 COLLPROF_LAUNCH_MIN_BYTES=4096 COLLPROF_LAUNCH_RUN=4 \
    COLLPROF_LAUNCH_RUN_GAP_US=1000000
  is "$(view "$T/$sc.m4k")" "$(want "$cap" 2 min=4096 run=4)" \
    "$sc, COLLPROF_LAUNCH_MIN_BYTES=4096, runs of 4: as the oracle says"
done
cap=$FIX/ar_nvlink/p0.jsonl
if [ -s "$cap" ]; then
  # not vacuous: the capture's sweep (8 B-4 MiB) has launches on both sides
  a=$(view "$T/ar_nvlink.m64k" | python3 -c 'import json,sys; print(json.load(sys.stdin)["timed"])')
  b=$(python3 "$TOP/test/launch_timer_oracle.py" "$cap" 4 | python3 -c 'import json,sys; print(json.load(sys.stdin)["timed"])')
  ok "ar_nvlink: fewer launches timed with the least size ($a) than without ($b), and some" test "$a" -gt 0 -a "$a" -lt "$b"
  # the launch mean stands for the calls of 64 KiB or more only, not for
  # every call of the path (summary.json gpu_launch_calls, collate/reduce.h)
  if [ -x "$BIN/collprof-collate" ]; then
    "$BIN/collprof-collate" -q "$T/ar_nvlink.m64k" >/dev/null 2>&1
    big=$(python3 -c 'import json,sys
n = 0
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("cb") == "start" and r.get("type") == 2 and r["count"] * {"ncclFloat32": 4}[r["datatype"]] >= 65536: n += 1
print(n)' "$cap")
    got=$(python3 -c 'import json,sys
s = json.load(open(sys.argv[1]))
p = [p for p in s["paths"] if p.get("gpu_launch_samples")][0]
print(p["gpu_launch_calls"], p["calls"] > p["gpu_launch_calls"], p["gpu_launch_est_ns"] == p["gpu_launch_call_ns"] * p["gpu_launch_calls"])' \
      "$T/ar_nvlink.m64k/summary.json" 2>&1)
    is "$got" "$big True True" "ar_nvlink, least size 64 KiB: gpu_launch_calls = the capture's calls of 64 KiB or more ($big), estimate = mean x those"
  else
    skip "no collprof-collate"
  fi
else
  skip "no ar_nvlink capture"; skip "no ar_nvlink capture"
fi

# Runs (COLLPROF_LAUNCH_RUN): one event pair around K consecutive launches.
# The replay is fast but a sanitizer's is not, so the gap limit is set far
# above either (a 0 limit, below, drops every run at its first gap).
for sc in ar_nvlink sendrecv ar_grouped ar4_threads; do
  cap=$FIX/$sc/p0.jsonl
  [ -s "$cap" ] || { skip "$sc: no capture"; continue; }
  for n in 4 16; do
    replay "$cap" "$T/$sc.r$n" COLLPROF_LAUNCH_SAMPLE=$n COLLPROF_LAUNCH_RUN=4 COLLPROF_LAUNCH_RUN_GAP_US=1000000
    is "$(view "$T/$sc.r$n")" "$(want "$cap" "$n" run=4)" \
      "$sc, COLLPROF_LAUNCH_SAMPLE=$n COLLPROF_LAUNCH_RUN=4: launches per run, runs dropped, per op; one record per run"
  done
done

cap=$FIX/ar_nvlink/p0.jsonl
if [ -s "$cap" ]; then
  # The default is runs of 8 (launch_timer.h, "Runs"): without
  # COLLPROF_LAUNCH_RUN the timer behaves as the oracle's run=8, and the
  # trace's meta record says so.
  LT_RUN1= replay "$cap" "$T/rdef" COLLPROF_LAUNCH_SAMPLE=16 COLLPROF_LAUNCH_RUN_GAP_US=1000000
  is "$(view "$T/rdef")" "$(want "$cap" 16 run=8)" \
    "no COLLPROF_LAUNCH_RUN: runs of 8 (the default), as the oracle's run=8"
  is "$(head -n 1 "$T"/rdef/*.jsonl | python3 -c 'import json,sys; c=json.load(sys.stdin)["config"]; print(c["launchRun"], c["launchRunGapUs"], c["launchSample"])')" \
    "8 1000000 16" "the meta record's config gives the launch timer's settings (launchRun 8 by default)"
  replay "$cap" "$T/gap0" COLLPROF_LAUNCH_SAMPLE=4 COLLPROF_LAUNCH_RUN=4 COLLPROF_LAUNCH_RUN_GAP_US=0
  is "$(view "$T/gap0")" "$(want "$cap" 4 run=4 gap0)" \
    "COLLPROF_LAUNCH_RUN_GAP_US=0: every run dropped at its first gap (launches skipped), first launches timed"
  # Where every run is dropped at the gap (an application that works
  # between calls), the back-off after each failed run keeps the loss
  # small: 4 launches of 19 lost here, against 10 of 19 when each clean
  # single launch regrew the run (launch_timer.c, adapt).
  is "$(view "$T/gap0" | python3 -c 'import json,sys; v=json.load(sys.stdin); print("ok" if v["skipped"] * 4 <= v["timed"] + v["skipped"] else v)')" ok \
    "every run dropped at the gap: at most a quarter of the launches due lost (back-off before runs are tried again)"
  # On an idle stream a run's start event is done before its last launch
  # is queued: its launches are counted idle, in no path's numbers, and the
  # thread's runs shrink to single launches.
  replay "$cap" "$T/ridle" COLLPROF_LAUNCH_SAMPLE=4 COLLPROF_LAUNCH_RUN=4 COLLPROF_LAUNCH_RUN_GAP_US=1000000 FAKECUDA_IDLE=1
  is "$(view "$T/ridle")" "$(want "$cap" 4 run=4 idle)" \
    "idle stream, runs of 4: every timed launch counted idle, none in a path, runs halved after each"
fi
w4=$(python3 "$TOP/test/launch_timer_oracle.py" "$cap" 4)
nt=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["timed"])' "$w4")

# The least interval: the first launch is timed, and the second (nothing
# is known of the pace before it); then the replay's pace, far faster than
# one launch in 10 s, spaces the next beyond the capture's 76 launches.
replay "$cap" "$T/iv" COLLPROF_LAUNCH_SAMPLE=1 COLLPROF_LAUNCH_INTERVAL_US=10000000
is "$(view "$T/iv" | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["timed"], v["skipped"], v["times"])')" "2 0 ok" \
  "COLLPROF_LAUNCH_INTERVAL_US=10000000 at replay speed: the first two of 76 launches timed, no more"
# An idle stream (the host cannot keep the GPU fed): the start event has
# completed by the launch's stop, so every timed launch holds the host's
# launch latency; all are timed and traced ("idle": true), none goes into
# a path's numbers.
replay "$cap" "$T/idle" COLLPROF_LAUNCH_SAMPLE=4 FAKECUDA_IDLE=1
is "$(view "$T/idle")" "{\"idle\": $nt, \"ops\": {}, \"records\": $nt, \"skipped\": 0, \"timed\": $nt, \"times\": \"ok\", \"unattributed\": 0, \"unread\": 0}" \
  "idle stream: the $nt timed launches counted idle, traced, in no path's numbers"
replay "$cap" "$T/off" COLLPROF_LAUNCH_SAMPLE=0
is "$(view "$T/off")" '{"idle": 0, "ops": {}, "records": 0, "skipped": 0, "timed": 0, "times": "ok", "unattributed": 0, "unread": 0}' \
  "COLLPROF_LAUNCH_SAMPLE=0: nothing timed"

stream=$(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("type") == 2048 and r.get("cb") == "start": print(r["stream"]); break' "$cap")
replay "$cap" "$T/capt" COLLPROF_LAUNCH_SAMPLE=4 FAKECUDA_CAPTURE_STREAM="$stream"
is "$(view "$T/capt")" "{\"idle\": 0, \"ops\": {}, \"records\": 0, \"skipped\": $nt, \"timed\": 0, \"times\": \"ok\", \"unattributed\": 0, \"unread\": 0}" \
  "launch stream being captured into a graph: never timed, each wanted launch counted skipped"

# The capture begins after 10 launches (FAKECUDA_CAPTURE_AFTER): the first
# 9 are timed and still in flight (ready after 50 ms), the rest skipped.
# Reading the 9 while the thread captures (cuEventQuery at a later launch)
# would invalidate the application's capture, as NCCL 2.28 on H200 showed
# ("unhandled cuda error" in the graph phase with every launch timed): the
# fake driver says so; they are read at finalize, in relaxed capture mode.
replay "$cap" "$T/capt2" COLLPROF_LAUNCH_SAMPLE=1 FAKECUDA_CAPTURE_STREAM="$stream" FAKECUDA_CAPTURE_AFTER=10 \
  FAKECUDA_READY_MS=50
is "$(view "$T/capt2" | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["timed"], v["skipped"], v["unread"], v["times"])')" \
  "9 67 0 ok" "capture from the 10th launch: 9 timed (read at finalize), 67 skipped"
ok "no potentially unsafe driver call inside the capture" bash -c "! grep -q 'during stream capture' '$T/log'"

never=$(python3 "$TOP/test/launch_timer_oracle.py" "$cap" 1 never)
t0=$(date +%s%N)
replay "$cap" "$T/never" COLLPROF_LAUNCH_SAMPLE=1 FAKECUDA_READY_MS=100000
t1=$(date +%s%N)
got=$(view "$T/never" | python3 -c 'import json,sys; v=json.load(sys.stdin); print(json.dumps({"recorded": v["unread"], "skipped": v["skipped"]}))')
is "$got" "$never" "events that never complete: 64 launches in flight (unread at finalize), the rest skipped"
ms=$(( (t1 - t0) / 1000000 ))
ok "finalize gave up on them within its bounded wait (replay took ${ms} ms)" test "$ms" -lt 5000

# Every k-th event record fails.  A failed start record skips the launch
# and the next record is a start again, so an odd k only ever hits starts
# (skipped) and an even k only stops (recorded but unreadable).
n1=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["timed"])' "$(python3 "$TOP/test/launch_timer_oracle.py" "$cap" 1)")
summ='import json,sys; v=json.load(sys.stdin); print(v["timed"], v["skipped"], v["unread"], v["times"])'
replay "$cap" "$T/fail2" COLLPROF_LAUNCH_SAMPLE=1 FAKECUDA_FAIL_RECORD=2
is "$(view "$T/fail2" | python3 -c "$summ")" "0 0 $n1 ok" "every second event record fails (each stop): every launch unread, none timed"
replay "$cap" "$T/fail" COLLPROF_LAUNCH_SAMPLE=1 FAKECUDA_FAIL_RECORD=3
got=$(view "$T/fail" | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["timed"] + v["skipped"], v["skipped"] > 0, v["unread"], v["times"])')
is "$got" "$n1 True 0 ok" "every third event record fails (each a start): launches timed or skipped, the timed ones right"
ok "failing event records: the replay ran to the end with no collprof warning" \
  bash -c "! grep -q 'collprof:' '$T/log' && grep -q 'collprof-replay: callbacks' '$T/log'"

# Where a CUDA driver is installed (a GPU host) there is no "no driver" to
# try; the capture's streams are then skipped for want of a current
# context (no CUDA context in the replay), never handed to the driver.
if python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; then
  env -u NCCL_PROFILE_EVENT_MASK COLLPROF_OUTPUT_DIR="$T/hostcuda" COLLPROF_QUIET=1 COLLPROF_LAUNCH_SAMPLE=1 \
    "$REPLAY" --no-mpi --plugin "$PLUGIN" "$cap" >"$T/log" 2>&1
  is "$?" 0 "a CUDA driver but no context: the replay ends normally"
  is "$(view "$T/hostcuda" | python3 -c 'import json,sys; v=json.load(sys.stdin); print(v["timed"], v["skipped"] > 0)')" \
    "0 True" "a CUDA driver but no context: nothing timed, the launches skipped"
else
  env -u NCCL_PROFILE_EVENT_MASK COLLPROF_OUTPUT_DIR="$T/nocuda" COLLPROF_QUIET=1 COLLPROF_LAUNCH_SAMPLE=1 \
    "$REPLAY" --no-mpi --plugin "$PLUGIN" "$cap" >"$T/log" 2>&1
  is "$(view "$T/nocuda")" '{"idle": 0, "ops": {}, "records": 0, "skipped": 0, "timed": 0, "times": "ok", "unattributed": 0, "unread": 0}' \
    "no CUDA driver: nothing timed, nothing counted"
  ok "no CUDA driver: no warning" bash -c "! grep -q 'collprof:' '$T/log'"
fi

# the collated summary (offline tool): counters and the per-path mean
if [ -x "$BIN/collprof-collate" ]; then
  "$BIN/collprof-collate" "$T/ar_nvlink.4" >/dev/null 2>&1
  got=$(python3 - "$T/ar_nvlink.4/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
p = [p for p in s["paths"] if p.get("gpu_launch_samples")]
print(s["gpu_launches_timed"], len(p), p[0]["gpu_launch_call_ns"] if p else None,
      p[0]["gpu_launch_est_ns"] == p[0]["gpu_launch_call_ns"] * p[0]["calls"] if p else None)
PY
)
  is "$got" "$nt 1 $STEP.0 True" "summary.json: launches timed, one path with launch samples, mean one step, estimate = mean x calls"
  ok "summary.log: launch columns and the run line" \
    bash -c "grep -q 'Kernel launches timed: *$nt ' '$T/ar_nvlink.4/summary.log' && grep -q 'Launches' '$T/ar_nvlink.4/summary.log'"
else
  skip "no collprof-collate"; skip "no collprof-collate"
fi
echo "1..$_tap_n"
[ "$_tap_fail" -eq 0 ]
