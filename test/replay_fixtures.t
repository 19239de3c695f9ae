#!/bin/bash
# replay_fixtures.t — every real NCCL capture replayed through libcollprof.so
# with collprof-replay; what the plugin wrote (path records, event records,
# state records, KernelCh GPU time) must equal what test/oracle.py computes
# from the same capture with code that shares nothing with collprof.
#
# Cases: all scenarios and pN files at the capture's mask; again with
# COLLPROF_POOL_SIZE=4 (slots reused constantly); --api v4 (a v4 plugin's
# view); and mask emulation (ar_nvlink at NCCL_PROFILE_EVENT_MASK=2).
. "$(dirname "$0")/tap.sh"

REPLAY=$BIN/collprof-replay
PLUGIN=$LIB/libcollprof.so
[ -x "$REPLAY" ] || skip_all "no $REPLAY (make first)"
[ -e "$PLUGIN" ] || skip_all "no $PLUGIN"
ls "$FIX"/*/p*.jsonl >/dev/null 2>&1 || skip_all "no fixtures in $FIX"
command -v python3 >/dev/null || skip_all "no python3"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
unset NCCL_PROFILER_PLUGIN COLLPROF_PERIODS COLLPROF_TRACE COLLPROF_POOL_SIZE
export COLLPROF_QUIET=1
TD=$TOP/test
n=0

# report RESULTS KEY DESC: one TAP result from a line of compare_counts.py
report() {
  local line
  line=$(awk -v k="$2" '$1 == k' "$1")
  if [ "$line" == "$2 ok" ]; then _tap_report 0 "$3"
  else _tap_report 1 "$3"; echo "#   ${line:-no result for $2}"; fi
}

# run_case NAME FILE ORACLE_ARGS -- ENV... -- REPLAY_ARGS...
# Replays FILE, then checks the output against oracle.py FILE ORACLE_ARGS.
run_case() {
  local name=$1 f=$2 oargs=$3; shift 3
  local envs=() rargs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  [ "${1:-}" == "--" ] && shift
  rargs=("$@")
  n=$((n + 1))
  local d=$T/case$n out
  mkdir -p "$d/out"
  python3 "$TD/oracle.py" "$f" $oargs >"$d/oracle.json"
  local mask
  mask=$(sed -n 's/.*"mask": \([0-9]*\).*/\1/p' "$d/oracle.json")
  env NCCL_PROFILE_EVENT_MASK="$mask" COLLPROF_GPU_SAMPLE=1 COLLPROF_OUTPUT_DIR="$d/out" "${envs[@]}" \
    "$REPLAY" --no-mpi --plugin "$PLUGIN" "${rargs[@]}" "$f" >"$d/stdout" 2>"$d/stderr"
  local rc=$?
  is "$rc" 0 "$name: replay exits 0"
  [ $rc -eq 0 ] || sed 's/^/#   /' "$d/stderr" | head -n 20
  out=$(ls "$d"/out/pid*.jsonl 2>/dev/null | head -n 1)
  if [ -z "$out" ]; then
    _tap_report 1 "$name: plugin wrote pid<PID>.jsonl"; ls -la "$d/out" | sed 's/^/#   /'
    return
  fi
  python3 "$TD/compare_counts.py" --save "$d/actual.json" "$d/oracle.json" "$out" bad_lines paths \
    paths=event_paths states path_states kernelch_gpu_ns kernelch_gpu_ns=event_kernelch_gpu_ns \
    path_gpu_ns >"$d/cmp.txt"
  report "$d/cmp.txt" bad_lines "$name: every line parses as JSON"
  report "$d/cmp.txt" paths "$name: path records (calls per path) = oracle"
  report "$d/cmp.txt" paths=event_paths "$name: event records per path = oracle"
  report "$d/cmp.txt" states "$name: state records = oracle"
  report "$d/cmp.txt" path_states "$name: states per path = oracle"
  report "$d/cmp.txt" kernelch_gpu_ns "$name: KernelCh GPU ns (path records) = oracle"
  report "$d/cmp.txt" kernelch_gpu_ns=event_kernelch_gpu_ns "$name: KernelCh GPU ns (event records) = oracle"
  report "$d/cmp.txt" path_gpu_ns "$name: KernelCh GPU ns per path = oracle"
}

for f in "$FIX"/*/p*.jsonl; do
  s=$(basename "$(dirname "$f")")/$(basename "$f" .jsonl)
  run_case "$s" "$f" ""
done

# Tiny pools: every slot is handed out again and again while children still
# name their parents.
for f in "$FIX"/*/p0.jsonl "$FIX"/ag4_net/p3.jsonl; do
  s=$(basename "$(dirname "$f")")/$(basename "$f" .jsonl)
  run_case "$s pool=4" "$f" "" COLLPROF_POOL_SIZE=4
done

# Without membarrier(2) (old kernels, seccomp) a pool's owner pays a full
# barrier instead (src/pool_owner.h): the same numbers.  The scenarios with
# children on another thread than their parents (posts, held KernelCh).
for s in ar4_threads ag4_net ar_net; do
  [ -e "$FIX/$s/p0.jsonl" ] || continue
  run_case "$s/p0 no membarrier" "$FIX/$s/p0.jsonl" "" COLLPROF_TEST_NO_MEMBARRIER=1
done

# Proxy-thread callbacks recorded and applied later by collprof's own
# thread (COLLPROF_PROXY_DEFER=1, src/proxy_defer.h): the same numbers,
# paths, GPU spans and trace records as inline -- also with tiny pools, so
# that slots are reused while applied records still name them.
for f in "$FIX"/*/p0.jsonl "$FIX"/ag4_net/p3.jsonl; do
  s=$(basename "$(dirname "$f")")/$(basename "$f" .jsonl)
  run_case "$s deferred" "$f" "" COLLPROF_PROXY_DEFER=1
done
for s in ar_net ag4_net; do
  run_case "$s/p0 deferred pool=4" "$FIX/$s/p0.jsonl" "" COLLPROF_PROXY_DEFER=1 COLLPROF_POOL_SIZE=4
done

# What the deferred run says about itself: every proxy-type callback of
# the capture recorded and applied, none stale, and each deferred event
# carries one thread on start and stop (the recording thread's: the
# applier writes it into both), not the application thread's.
DF=$FIX/ar_net/p0.jsonl
mkdir -p "$T/defer"
NCCL_PROFILE_EVENT_MASK=4095 COLLPROF_GPU_SAMPLE=1 COLLPROF_PROXY_DEFER=1 COLLPROF_OUTPUT_DIR="$T/defer" \
  "$REPLAY" --no-mpi --plugin "$PLUGIN" "$DF" >/dev/null 2>"$T/defer.err"
ok "deferred: counts, threads" python3 -c '
import glob, json, sys
fix = [json.loads(l) for l in open(sys.argv[1])]
proxy = 8 | 16 | 32 | 64 | 128
types = {r["h"]: r["type"] for r in fix if r["cb"] == "start"}
want = sum(1 for r in fix if r["cb"] in ("start", "stop", "state") and types.get(r["h"], 0) & proxy)
out = [json.loads(l) for l in open(glob.glob(sys.argv[2] + "/pid*.jsonl")[0])]
rank = [r for r in out if r.get("recordType") == "rank"][0]
assert rank["proxyDeferred"] == want == rank["proxyDeferApplied"], (rank.get("proxyDeferred"), want)
assert rank["proxyDeferStale"] == 0 and rank["proxyDeferFull"] == 0
app = {r["start"]["tid"] for r in out if r.get("type") == "ncclProfileGroupApi"}
px = [r for r in out if r.get("type") in ("ncclProfileKernelCh", "ncclProfileProxyOp", "ncclProfileProxyStep")]
assert px and all(r["start"]["tid"] == r["stop"]["tid"] for r in px)
assert len({r["start"]["tid"] for r in px}) == 1 and not ({r["start"]["tid"] for r in px} & app)
' "$DF" "$T/defer"

# A v4 plugin's view (NCCL 2.27): no API events, Coll/P2p under Group.
for s in ar_nvlink sendrecv ar_net; do
  [ -e "$FIX/$s/p0.jsonl" ] || continue
  run_case "$s/p0 --api v4" "$FIX/$s/p0.jsonl" "--api v4" -- --api v4
done

# Mask emulation: Coll only.  NCCL still sends the ancestors Coll needs.
for p in p0 p1; do
  [ -e "$FIX/ar_nvlink/$p.jsonl" ] || continue
  run_case "ar_nvlink/$p mask=2" "$FIX/ar_nvlink/$p.jsonl" "--mask 2" COLLPROF_GPU_SAMPLE=0
done

# The live mask: with GPU sampling the plugin turns KernelCh on for some API
# calls only, and the replay (like NCCL) applies the mask read at each
# GroupApi start to the whole call.  So each Coll has either none or all of
# its recorded KernelCh, and as many Colls have them as the plugin sampled.
if [ -e "$FIX/ar_nvlink/p0.jsonl" ]; then
  mkdir -p "$T/live"
  env -u NCCL_PROFILE_EVENT_MASK COLLPROF_GPU_SAMPLE=4 COLLPROF_OUTPUT_DIR="$T/live" \
    "$REPLAY" --no-mpi --plugin "$PLUGIN" "$FIX/ar_nvlink/p0.jsonl" 2>"$T/live.err"
  ok "live mask (COLLPROF_GPU_SAMPLE=4): KernelCh all-or-nothing per API call" python3 - \
    "$FIX/ar_nvlink/p0.jsonl" "$(ls "$T"/live/pid*.jsonl 2>/dev/null | head -n 1)" <<'EOF'
import json, sys
cap = [json.loads(l) for l in open(sys.argv[1])]
seq_of = {r["h"]: r["seq"] for r in cap if r["cb"] == "start" and r["type"] == 2}
want = {}
for r in cap:
    if r["cb"] == "start" and r["type"] == 64:
        want[seq_of[r["parent"]]] = want.get(seq_of[r["parent"]], 0) + 1
out = [json.loads(l) for l in open(sys.argv[2])]
colls = [r for r in out if r.get("type") == "ncclProfileColl"]
rank = [r for r in out if r.get("recordType") == "rank"][0]
got = {}
for k in (r for r in out if r.get("type") == "ncclProfileKernelCh"):
    # the latest Coll with that handle that started before the KernelCh
    c = max((c for c in colls if c["eventAddr"] == k["parentObj"]
             and c["start"]["ts"] <= k["start"]["ts"]), key=lambda c: c["start"]["ts"])
    got[c["details"]["seq"]] = got.get(c["details"]["seq"], 0) + 1
bad = {s: (n, want.get(s)) for s, n in got.items() if n != want.get(s)}
print("sampled calls", rank["gpuSampledCalls"], "Colls with KernelCh", len(got), "of", len(colls))
assert not bad, "KernelCh per Coll seq (got, recorded): %r" % bad
assert 0 < len(got) < len(colls), "sampling should cover some calls, not all"
assert len(got) == rank["gpuSampledCalls"], "gpuSampledCalls != Colls with KernelCh"
EOF
fi

# Loading the way NCCL does (NCCL_PROFILER_PLUGIN), with the do-nothing
# plugin where collprof's output would get in the way.
F1=$FIX/ar_nvlink/p0.jsonl
NOOP=$LIB/libnccl-profiler-noop.so
summary() { sed -n 's/^collprof-replay: callbacks \([0-9]*\) ([^)]*), events started \([0-9]*\).*/\1 \2/p' "$1"; }
mkdir -p "$T/load/none" "$T/load/default"
NCCL_PROFILER_PLUGIN=none COLLPROF_OUTPUT_DIR="$T/load/none" "$REPLAY" --no-mpi "$F1" 2>"$T/load/none.err"
is "$(summary "$T/load/none.err")" "0 0" "NCCL_PROFILER_PLUGIN=none: no callback at all"
env -u NCCL_PROFILER_PLUGIN NCCL_PROFILE_EVENT_MASK=4095 COLLPROF_OUTPUT_DIR="$T/load/default" \
  "$REPLAY" --no-mpi "$F1" 2>"$T/load/default.err"
ok "unset: falls back to ../lib/libcollprof.so next to the binary" test -n "$(ls "$T/load/default"/pid*.jsonl 2>/dev/null)"
if [ -e "$NOOP" ]; then
  starts=$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["cb"]=="start"))' "$F1")
  NCCL_PROFILER_PLUGIN=$NOOP NCCL_PROFILE_EVENT_MASK=4095 "$REPLAY" --no-mpi "$F1" 2>"$T/load/abs.err"
  is "$(summary "$T/load/abs.err")" "$(wc -l <"$F1" | tr -d ' ') $starts" "NCCL_PROFILER_PLUGIN=<path>: every recorded callback replayed"
  LD_LIBRARY_PATH=$LIB NCCL_PROFILER_PLUGIN=noop NCCL_PROFILE_EVENT_MASK=4095 "$REPLAY" --no-mpi "$F1" 2>"$T/load/short.err"
  is "$(summary "$T/load/short.err")" "$(wc -l <"$F1" | tr -d ' ') $starts" "NCCL_PROFILER_PLUGIN=noop: libnccl-profiler-noop.so"
  NCCL_PROFILER_PLUGIN=$NOOP NCCL_PROFILE_EVENT_MASK=0 "$REPLAY" --no-mpi "$F1" 2>"$T/load/mask0.err"
  is "$(summary "$T/load/mask0.err")" "2 0" "mask 0: only init and finalize, no event callback"
  # its pause, for test/gpu/ab.sh's floor: the mask NCCL reads goes to
  # GroupApi alone and back, the previous state returned, as collprof's
  # (loaded into python: not under a sanitizer, whose runtime python lacks)
  got=$([ -n "${SAN:-}" ] && echo "skip" || NCCL_PROFILE_EVENT_MASK=4031 python3 - "$NOOP" <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
INIT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint64, ctypes.POINTER(ctypes.c_int),
                        ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p)
class V5(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("init", INIT)]
v5 = V5.in_dll(lib, "ncclProfiler_v5")
ctx, mask = ctypes.c_void_p(), ctypes.c_int(0)
v5.init(ctypes.byref(ctx), 1, ctypes.byref(mask), b"", 1, 2, 0, None)
out = [mask.value]
for f in ("collprof_pause", "collprof_pause", "collprof_paused", "collprof_resume"):
    out += [getattr(lib, f)(), mask.value]
print(" ".join(map(str, out)))
PY
)
  if [ "$got" = skip ]; then skip "do-nothing plugin's pause: not loaded into python under a sanitizer"
  else is "$got" "4031 0 256 1 256 1 256 1 4031" "do-nothing plugin's collprof_pause/resume: mask 4031, paused 256, resumed 4031"; fi
else
  skip "no $NOOP"; skip "no $NOOP"; skip "no $NOOP"; skip "no $NOOP"
fi

# Capture mode: what collprof writes with COLLPROF_CAPTURE=1 is a capture in
# the fixtures' format that replays anywhere: the oracle finds the same
# paths, states and GPU time in it as in the original, and replaying it
# gives the same per-path counts as the original replay.
CF=$FIX/ar_net/p0.jsonl
mkdir -p "$T/cap/a" "$T/cap/b"
NCCL_PROFILE_EVENT_MASK=4095 COLLPROF_GPU_SAMPLE=1 COLLPROF_CAPTURE=1 COLLPROF_OUTPUT_DIR="$T/cap/a" \
  "$REPLAY" --no-mpi "$CF" 2>"$T/cap/a.err"
capf=$(ls "$T/cap/a"/capture-pid*.jsonl 2>/dev/null | head -n 1)
ok "capture file written" test -s "$capf"
python3 "$TD/oracle.py" "$CF" >"$T/cap/orig.json"
python3 "$TD/oracle.py" "$capf" >"$T/cap/capt.json" 2>"$T/cap/capt.err"
ok "oracle: the capture holds the same paths, states and GPU time as the original" \
  python3 -c 'import json,sys; a,b=({k: v for k, v in json.load(open(f)).items() if k != "file"} for f in sys.argv[1:]); assert a==b, [k for k in a if a[k]!=b.get(k)]' "$T/cap/orig.json" "$T/cap/capt.json"
NCCL_PROFILE_EVENT_MASK=4095 COLLPROF_GPU_SAMPLE=1 COLLPROF_OUTPUT_DIR="$T/cap/b" \
  "$REPLAY" --no-mpi "$capf" 2>"$T/cap/b.err"
ok "replaying the capture gives the original replay's per-path counts" python3 -c '
import glob, json, sys
def paths(d):
    f = [x for x in glob.glob(d + "/pid*.jsonl")][0]
    return {r["path"]: r["calls"] for r in map(json.loads, open(f)) if r.get("recordType") == "path"}
a, b = paths(sys.argv[1]), paths(sys.argv[2])
assert a == b and a, (a, b)' "$T/cap/a" "$T/cap/b"
# capture_lint.py (run on GPU captures to find NCCL's calls on stopped
# events): collprof reuses handles, and a capture of a clean run lints
# clean; a crafted stop twice and a state after the stop are both found.
ok "capture_lint: the capture of a replayed fixture has no call on a stopped event" \
  python3 "$TD/gpu/capture_lint.py" "$capf"
printf '%s\n' '{"cb":"start","t":1,"tid":5,"ctx":"0x1","h":"0xc1","type":16,"parent":"(nil)"}' \
  '{"cb":"stop","t":2,"tid":5,"h":"0xc1"}' '{"cb":"state","t":3,"tid":6,"h":"0xc1","state":9}' \
  '{"cb":"stop","t":4,"tid":6,"h":"0xc1"}' '{"cb":"start","t":5,"tid":5,"ctx":"0x1","h":"0xc1","type":16,"parent":"(nil)"}' \
  '{"cb":"stop","t":6,"tid":5,"h":"0xc1"}' >"$T/cap/dbl.jsonl"
python3 "$TD/gpu/capture_lint.py" "$T/cap/dbl.jsonl" >"$T/cap/dbl.out"
is "$(tail -n 1 "$T/cap/dbl.out")" "capture_lint: 2 callback(s) on events already stopped in 1 file(s)" \
  "capture_lint: a stop twice and a state after the stop are found; the handle's reuse after a new start is not"

# A process that exits without finalizing its communicator (many do), the
# trace off: the rank file is still written at exit, with the profile
# (with the trace off it used to leave no file at all).
grep -v '"cb":"fini"' "$FIX/ar_nvlink/p0.jsonl" >"$T/nofini.jsonl"
COLLPROF_TRACE=0 COLLPROF_OUTPUT_DIR="$T/nofini" COLLPROF_QUIET=1 "$REPLAY" --no-mpi "$T/nofini.jsonl" >/dev/null 2>&1
is "$(python3 -c '
import glob, json, sys
f = glob.glob(sys.argv[1] + "/pid*.jsonl")
rs = [json.loads(l) for l in open(f[0])] if f else []
print(len(f), sum(r.get("recordType") == "event" for r in rs), any(r.get("recordType") == "rank" for r in rs),
      max([r["calls"] for r in rs if r.get("path") == "GroupApi/CollApi:AllReduce/Coll:AllReduce"] or [0]))' "$T/nofini")" \
  "1 0 True 76" "no finalize, trace off: one rank file at exit, no event line, the rank record and the Coll path's 76 calls"

done_testing
