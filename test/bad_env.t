#!/usr/bin/env bash
# bad_env.t — every environment variable collprof reads, set to values a
# job script gets wrong (empty, negative, past 64 bits, not a number,
# trailing junk, hex, 5000 characters, bytes that are not UTF-8, ...), one
# variable at a time, over a replay of the NVLink all-reduce capture: the
# run must end normally, every stderr line must be collprof's (prefix
# collprof:), and the rank file, where the folder can be written, must be
# whole JSON.  Five values per variable (two under the sanitizers), every
# value with many variables; COLLPROF_BAD_ENV_ALL=1 tries them all.
. "$(dirname "$0")/tap.sh"
need_replay_collate
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:halt_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1}
unset NCCL_PROFILER_PLUGIN COLLPROF_PERIODS COLLPROF_TRACE COLLPROF_OUTPUT_DIR
CAP=$FIX/ar_nvlink/p0.jsonl
# A value the launch timer does not understand leaves it at its default,
# on (collprof-replay only defaults it to off).  With the real libcuda of
# a GPU host it would skip every launch (no CUDA context in the replay:
# src/launch_timer.c), and without one it never starts; the stand-in
# libcuda (test/fakecuda, as launch_timer.t) has a context and takes any
# stream, so the LAUNCH variables' bad values drive the timer on every host.
export LD_LIBRARY_PATH="$LIB/fakecuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# the variables plugin and MPI layer read (src/, mpi_wrap/), the loader's
# NCCL_PROFILER_PLUGIN aside (the replay loads the plugin with --plugin)
VARS=$(grep -ohE '"(COLLPROF|NCCL_PROFILE)_[A-Z0-9_]+"' "$TOP"/src/*.c "$TOP"/mpi_wrap/*.c | tr -d '"' | sort -u)
nvars=$(echo "$VARS" | wc -w)
ok "found the variables collprof reads ($nvars)" test "$nvars" -ge 20
LONG=$(head -c 5000 /dev/zero | tr '\0' 7)
BADUTF=$(printf '\377\376\200')
VALUES=("" "-1" "0" "18446744073709551616" "-9223372036854775809" "abc" "5x" "0x10" " 7 " "1e9"
        "nan" "1:2:3:4:5" "$LONG" "$BADUTF")

# run_case VAR VALUE-INDEX
run_case() {
  local var=$1 vi=$2 d=$T/c
  rm -rf "$d"; mkdir -p "$d/out"
  (cd "$d" && env COLLPROF_OUTPUT_DIR="$d/out" "$var=${VALUES[$vi]}" \
     "$REPLAY" --no-mpi --plugin "$PLUGIN" "$CAP" >"$d/stdout" 2>"$d/stderr")
  local rc=$? label="$var=<value $vi>"
  local other
  other=$(grep -v '^collprof: \|^collprof-replay: ' "$d/stderr" | head -n 3)
  if [ "$rc" -eq 0 ] && [ -z "$other" ]; then
    _tap_report 0 "$label: ends normally, collprof: lines only"
  else
    _tap_report 1 "$label: ends normally, collprof: lines only (status $rc)"
    sed 's/^/#   /' "$d/stderr" | head -n 20 | cut -c1-300
  fi
  local f
  f=$(ls "$d"/out/*.jsonl "$d"/out/*/*.jsonl 2>/dev/null | grep -v capture | head -n 1)
  if [ -n "$f" ]; then
    python3 -c '
import json, sys
for n, l in enumerate(open(sys.argv[1], "rb"), 1):
    json.loads(l)' "$f" >"$d/parse" 2>&1 || { _tap_report 1 "$label: the rank file is whole JSON"; head -n 5 "$d/parse" | sed 's/^/#   /'; }
  fi
}

# Each variable with PER values, rotating through the list so that every
# value meets many variables (the whole cross product took 3 minutes here);
# COLLPROF_BAD_ENV_ALL=1 runs all of it.
if [ -n "${COLLPROF_BAD_ENV_ALL:-}" ]; then PER=${#VALUES[@]}; elif [ -n "${SAN:-}" ]; then PER=2; else PER=5; fi
i=0
for v in $VARS; do
  for k in $(seq 0 $((PER - 1))); do run_case "$v" $(( (i * PER + k) % ${#VALUES[@]} )); done
  i=$((i + 1))
done
done_testing
