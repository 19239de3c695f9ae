#!/usr/bin/env bash
# collate_damage.t — collprof-collate on damaged rank files: what a job
# killed mid-write, a full disk or a hand edit leaves (cut files and lines,
# bytes overwritten, values beyond 64 bits, keys missing, no events at all;
# test/damage_rankfiles.py).  collprof-collate, with every export asked
# for, must end normally (0, or 1 when nothing could be read) and say why
# on stderr in collprof: lines; what it wrote must parse.  The sanitizer
# builds run it too: undefined arithmetic on a damaged time is a failure.
# Random cases are seeded: DAMAGE_SEED=S reruns them from S.
. "$(dirname "$0")/tap.sh"
need_replay_collate
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
unset NCCL_PROFILER_PLUGIN COLLPROF_PERIODS COLLPROF_TRACE
export COLLPROF_QUIET=1

# Two rank files from the NVLink all-reduce capture, both of its processes.
mkdir -p "$T/base"
for p in "$FIX"/ar_nvlink/p*.jsonl; do
  COLLPROF_OUTPUT_DIR="$T/base" NCCL_PROFILE_EVENT_MASK=4095 COLLPROF_GPU_SAMPLE=1 \
    "$REPLAY" --no-mpi --plugin "$PLUGIN" "$p" >/dev/null 2>&1
done
n=$(ls "$T"/base/pid*.jsonl 2>/dev/null | wc -l)
is "$n" 2 "two rank files to damage"
"$COLLATE" -q --chrome "$T/base/c.json" "$T/base" >"$T/base.out" 2>&1
is "$?" 0 "the undamaged files collate"

# collate_case LABEL DAMAGE-ARGS...
collate_case() {
  local label=$1; shift
  local d=$T/d
  python3 "$TOP/test/damage_rankfiles.py" "$T/base" "$d" "$@"
  "$COLLATE" -q --chrome "$d/c.json" --folded "$d/f.txt" --html "$d/r.html" --sizes "$d/s.txt" --rank-logs all "$d" \
    >"$d/stdout" 2>"$d/stderr"
  local rc=$?
  if [ "$rc" -le 1 ] && ! grep -q 'Sanitizer\|runtime error' "$d/stderr"; then _tap_report 0 "$label: ends normally (status $rc)"
  else _tap_report 1 "$label: ends normally (status $rc)"; sed 's/^/#   /' "$d/stderr" | head -n 25; fi
  local other
  other=$(grep -v '^collprof: ' "$d/stderr" | head -n 3)
  is "$other" "" "$label: stderr holds collprof: lines only"
  if [ "$rc" -eq 0 ]; then
    ok "$label: summary.json and the Chrome trace parse" python3 -c '
import json, sys
for f in sys.argv[1:]: json.load(open(f))' "$d/summary.json" "$d/c.json"
  fi
}

for c in huge-ts no-events empty cut-mid-line binary big-uint; do collate_case "$c" --case "$c"; done
# the last one: nothing to skip, every record in the Chrome trace
is "$(grep -c 'skipped' "$T/d/stderr")" 0 "big-uint: no line skipped"
ok "big-uint: as many Chrome events as undamaged" python3 -c '
import json, sys
n = [len(json.load(open(f))["traceEvents"]) for f in sys.argv[1:]]
sys.exit(0 if n[0] == n[1] else "%d != %d" % tuple(n))' "$T/base/c.json" "$T/d/c.json"
if [ -n "${SAN:-}" ]; then N=12; else N=${COLLPROF_DAMAGE_CASES:-40}; fi
s=${DAMAGE_SEED:-1}
for i in $(seq 1 "$N"); do collate_case "random damage, seed $s" "$s"; s=$((s + 1)); done

done_testing
