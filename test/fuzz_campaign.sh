#!/bin/bash
# fuzz_campaign.sh — the fuzz of test/replay_synthetic.t (collprof-replay
# --synthetic fuzz: random misuse mixed with good calls on several threads)
# over many seeds for a time budget, where make check runs one seed per
# case.  For a sanitizer build above all: a report stops the process
# (halt_on_error), which counts as a failure here.
#
#   test/fuzz_campaign.sh BUILD SECONDS [FIRST_SEED]
#       e.g. make SAN=address all && test/fuzz_campaign.sh build/san-address 1500 1000
#
# Each seed runs eight cases: every event; collprof's defaults; proxy
# callbacks deferred; trace off with host sampling 4; the v4 interface;
# collprof_shutdown while the threads call; a capture of the run; host
# sampling auto on 4 threads.  A run passes when the replay exits 0, says
# nothing on stderr but collprof: lines, and its output collates.  A failed
# run's folder is kept (its path printed, with the seed and the case to
# rerun it); the last line counts runs and failures.  STEPS (default
# 15000) callbacks per run.  Exit status: 1 when a run failed.
set -u
[ $# -ge 2 ] || { echo "usage: fuzz_campaign.sh BUILD SECONDS [FIRST_SEED]" >&2; exit 2; }
B=$(cd "$1" && pwd) || exit 2
[ -x "$B/bin/collprof-replay" ] && [ -e "$B/lib/libcollprof.so" ] || { echo "fuzz_campaign.sh: no collprof-replay or libcollprof.so under $B" >&2; exit 2; }
[[ $2 =~ ^[0-9]+$ ]] || { echo "fuzz_campaign.sh: SECONDS is a number" >&2; exit 2; }
DEADLINE=$(( $(date +%s) + $2 ))
seed=${3:-1000}
STEPS=${STEPS:-15000}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export COLLPROF_QUIET=1
unset NCCL_PROFILER_PLUGIN COLLPROF_PERIODS COLLPROF_TRACE COLLPROF_POOL_SIZE
W=$(mktemp -d "${TMPDIR:-/tmp}/collprof-fuzz.XXXXXX")
# ENV...|REPLAY ARGS
cases=("|--threads 3"
       "NCCL_PROFILE_EVENT_MASK=4031 COLLPROF_GPU_SAMPLE=16|--threads 3"
       "COLLPROF_PROXY_DEFER=1|--threads 3"
       "COLLPROF_TRACE=0 COLLPROF_HOST_SAMPLE=4|--threads 3"
       "|--api v4 --threads 2"
       "COLLPROF_FUZZ_SHUTDOWN=1|--threads 3"
       "COLLPROF_CAPTURE=1|--threads 3"
       "COLLPROF_HOST_SAMPLE=auto NCCL_PROFILE_EVENT_MASK=4031|--threads 4")
runs=0 failed=0
while [ "$(date +%s)" -le "$DEADLINE" ]; do
  for c in "${cases[@]}"; do
    [ "$(date +%s)" -le "$DEADLINE" ] || break
    envs=${c%%|*} args=${c#*|}
    d=$W/seed$seed.case$runs
    mkdir -p "$d/out"
    runs=$((runs + 1))
    # shellcheck disable=SC2086
    env NCCL_PROFILE_EVENT_MASK=4095 COLLPROF_GPU_SAMPLE=1 COLLPROF_TRACE_BUFFER=131072 COLLPROF_OUTPUT_DIR="$d/out" \
      COLLPROF_FUZZ_SEED=$seed $envs timeout 300 "$B/bin/collprof-replay" --no-mpi --plugin "$B/lib/libcollprof.so" \
      --synthetic fuzz --expect "$d/expect.json" $args --count "$STEPS" >"$d/stdout" 2>"$d/stderr"
    rc=$?
    other=$(grep -v '^collprof: \|^collprof-replay: ' "$d/stderr" | head -n 3)
    "$B/bin/collprof-collate" -q "$d/out" >"$d/collate.out" 2>&1
    crc=$?
    if [ $rc -ne 0 ] || [ -n "$other" ] || [ $crc -ne 0 ]; then
      failed=$((failed + 1))
      echo "FAIL seed $seed, case '$c': replay exit $rc, collate exit $crc; kept in $d"
      [ -z "$other" ] || sed 's/^/   /' <<<"$other"
    else
      rm -rf "$d"
    fi
  done
  seed=$((seed + 1))
done
[ "$failed" -gt 0 ] || rm -rf "$W"
echo "fuzz_campaign.sh: $runs runs, $failed failed, seeds ${3:-1000}..$((seed - 1)), $STEPS callbacks each"
[ "$failed" -eq 0 ]
