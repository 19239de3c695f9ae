#!/bin/bash
# periods.t — profiling windows end to end: a real capture replayed at its
# own pace (collprof-replay --timed, the replay's mask emulation sending
# what NCCL sends for the mask it reads) under COLLPROF_PERIODS, alone and
# under mpirun.  The bundled ag4_net capture (4 ranks) makes one call 0.04 s
# after its first init and 34 more from 0.11 s; the test moves every
# callback from the second call on 2 s later, so that with
# COLLPROF_PERIODS=1:30 the first call falls well before the window and the
# others well inside it, however slowly a loaded machine replays.  The
# first must leave no count, no path and no trace record (NCCL was asked for
# its GroupApi alone, which collprof ignores), the other 34 must be counted
# exactly as without periods, and the rank record, summary.log and
# summary.json must say which window was profiled.
. "$(dirname "$0")/tap.sh"
REPLAY=$BIN/collprof-replay
PLUGIN=$LIB/libcollprof.so
MPILIB=$LIB/libcollprof-mpi.so
COLLATE=$BIN/collprof-collate
for f in "$REPLAY" "$PLUGIN" "$COLLATE"; do [ -e "$f" ] || skip_all "no $f (make first)"; done
command -v python3 >/dev/null || skip_all "no python3"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
unset NCCL_PROFILER_PLUGIN COLLPROF_PERIODS COLLPROF_TRACE COLLPROF_POOL_SIZE COLLPROF_START_PAUSED \
  NCCL_PROFILE_EVENT_MASK COLLPROF_GPU_SAMPLE
export COLLPROF_QUIET=1
[ -e "$FIX/ag4_net/p1.jsonl" ] || skip_all "no $FIX/ag4_net"
# shift2 FILE OUT: every callback from the second GroupApi start on, 2 s later
shift2() { python3 - "$1" "$2" <<'EOF'
import json, sys
out = open(sys.argv[2], "w")
seen = 0
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o.get("cb") == "start" and o.get("type") == 256:
        seen += 1
    if seen >= 2:
        o["t"] += 2000000000
    out.write(json.dumps(o) + "\n")
EOF
}
shift2 "$FIX/ag4_net/p0.jsonl" "$T/p0.jsonl"
shift2 "$FIX/ag4_net/p1.jsonl" "$T/p1.jsonl"
CAP=$T/p0.jsonl

# jq-free JSON reads: the GroupApi and Coll calls of a summary.json, its
# path strings, and config.windows
sj() { python3 - "$@" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
what = sys.argv[2]
calls = {p["path"]: p.get("calls_total", p.get("calls", 0)) for p in s["paths"]}
if what == "calls":
    print(calls.get(sys.argv[3], 0))
elif what == "paths":
    print("\n".join(sorted(calls)))
elif what == "windows":
    print(s["config"].get("windows", "(none)"))
EOF
}
replay() {   # NAME ENV... : a timed replay of CAP without MPI, then collprof-collate
  local name=$1; shift
  mkdir -p "$T/$name"
  env COLLPROF_OUTPUT_DIR="$T/$name" "$@" timeout 60 "$REPLAY" --no-mpi --timed --plugin "$PLUGIN" "$CAP" \
    >"$T/$name.out" 2>&1 && "$COLLATE" "$T/$name" >>"$T/$name.out" 2>&1
}

replay all
is "$?" 0 "a timed replay without periods, collated"
replay win COLLPROF_PERIODS=1:30
is "$?" 0 "the same with COLLPROF_PERIODS=1:30"
GA=GroupApi
CO="GroupApi/CollApi:AllGather/Coll:AllGather"
n_all=$(sj "$T/all/summary.json" calls "$GA")
is "$n_all" 35 "without periods: 35 calls"
is "$(sj "$T/win/summary.json" calls "$GA")" 34 "periods: the call before the window is not counted (34 of 35)"
is "$(sj "$T/win/summary.json" calls "$CO")" "$(( $(sj "$T/all/summary.json" calls "$CO") - 1 ))" \
  "periods: nor its Coll"
sj "$T/all/summary.json" paths >"$T/all.paths"
sj "$T/win/summary.json" paths >"$T/win.paths"
is "$(comm -13 "$T/all.paths" "$T/win.paths" | wc -l)" 0 "periods: every path is one the full run has"
w=$(sj "$T/win/summary.json" windows)
ok "summary.json config.windows is one window from 1 s: '$w'" bash -c "[[ '$w' =~ ^1\\.000-([0-9]+\\.[0-9]{3}|open)$ ]]"
ok "summary.log says which window was profiled" grep -Eq '^  Profiled windows \[s\]: +1\.000-' "$T/win/summary.log"
ok "without periods summary.log says all the time" grep -Eq '^  Profiled windows \[s\]: +all the time$' "$T/all/summary.log"
ok "the rank record carries the windows" grep -q '"windows":"1.000-' "$T/win"/pid*.jsonl
first=$(python3 - "$T"/win/pid*.jsonl <<'EOF'
import json, sys
init = None; early = 0
for l in open(sys.argv[1]):
    o = json.loads(l)
    if o.get("recordType") == "event" and o.get("type") == "ProfilerLifecycle" and init is None:
        init = o["start"]["ts"]
    elif o.get("recordType") == "event" and init is not None and o["start"]["ts"] < init + 1e6:
        early += 1
print(early)
EOF
)
is "$first" 0 "the trace holds no event from before the window"

# COLLPROF_START_PAUSED with nothing to resume it: nothing recorded at all
replay paused COLLPROF_START_PAUSED=1
is "$?" 0 "start paused: the replay runs"
is "$(sj "$T/paused/summary.json" calls "$GA")" 0 "start paused, never resumed: no call counted"
is "$(sj "$T/paused/summary.json" windows)" "none yet" "...and the summary says no window was profiled"

# Under mpirun the summary comes from the MPI layer's snapshots (plain
# build only: a sanitizer's runtime cannot be preloaded into mpirun's ranks,
# as in mpi_collate.t).
if [ -z "${SAN:-}" ] && [ -e "$MPILIB" ] && command -v mpirun >/dev/null; then
  COLLPROF_OUTPUT_DIR=$T/mpi COLLPROF_PERIODS=1:30 timeout 120 "${MPIRUN[@]}" -np 2 -x COLLPROF_OUTPUT_DIR \
    -x COLLPROF_PERIODS -x COLLPROF_QUIET -x COLLPROF_HOST_SAMPLE -x LD_PRELOAD="$MPILIB" \
    "$REPLAY" --timed "$T/p0.jsonl" "$T/p1.jsonl" >"$T/mpi.out" 2>&1
  is "$?" 0 "mpirun -np 2, periods 1:30: runs"
  ok "MPI summary.log gives rank 0's window" grep -Eq '^  Profiled windows \[s\]: +1\.000-' "$T/mpi/summary.log"
  is "$(sj "$T/mpi/summary.json" calls "$GA")" 68 "MPI: 34 calls per rank counted, the early ones not"
else
  for i in 1 2 3; do skip "mpirun: not under a sanitizer, or no mpirun or MPI layer"; done
fi
done_testing
