#!/bin/bash
# host_sample.t — host sampling (COLLPROF_HOST_SAMPLE=N, src/call_modes.h "Host
# sampling") on CPU: real captures replayed through libcollprof.so with the
# default mask (GPU sampling by the replay's live-mask emulation) once with
# every call timed and once with N = 4, 16, 0 and auto (as N = 1 with
# COLLPROF_HOST_SAMPLE_US=0, as 64 with an hour); host_sample_check.py
# holds each sampled run to the reference: counts per path exact, GPU
# samples untouched, events recorded + counted = recorded, estimates
# consistent, the trace holding the timed calls.  Then the offline and the
# MPI collation of a sampled run: same calls per path, times marked as
# estimates in summary.json and summary.log.  Lean calls are off here
# (COLLPROF_LEAN=0): with them NCCL sends fewer events, which test/lean.t
# checks; this test holds every event of every call to the reference.
. "$(dirname "$0")/tap.sh"
need_replay_collate
unset NCCL_PROFILE_EVENT_MASK COLLPROF_GPU_SAMPLE COLLPROF_PERIODS COLLPROF_TRACE COLLPROF_HASH_BITS
export COLLPROF_LEAN=0
CHK=(python3 "$TOP/test/host_sample_check.py")

# N: a number, or auto0 / auto1h: COLLPROF_HOST_SAMPLE=auto with timed calls
# kept 0 us apart (every call timed, as N = 1) or an hour apart (1 in 64
# after the first two calls).  Not 1 s: a replay's calls come microseconds
# apart, but under ThreadSanitizer those of ar4_threads came 45-106 ms
# apart, which makes blocks of 16 and 32 (the rule, but not the 1 in 64
# the check expects; 8-10 calls of 100 timed against at most 9.6).
replay() { # OUT N CAPTURE...
  local out=$1 n=$2 us=100; shift 2
  case $n in auto0) n=auto us=0 ;; auto1h) n=auto us=3600000000 ;; esac
  rm -rf "$out"
  COLLPROF_HOST_SAMPLE=$n COLLPROF_HOST_SAMPLE_US=$us COLLPROF_OUTPUT_DIR="$out" COLLPROF_QUIET=1 \
    "$REPLAY" --no-mpi --plugin "$PLUGIN" "$@" >"$out.log" 2>&1
}
expect_n() { case $1 in auto0) echo 1 ;; auto1h) echo 64 ;; *) echo "$1" ;; esac; }

# ar_net: ProxyOp and ProxyStep on the proxy thread under counted Colls;
# ar4_threads: two application threads (and communicators) in one process
for sc in ar_nvlink sendrecv ar_grouped ar_net ar4_threads; do
  cap=$FIX/$sc/p0.jsonl
  [ -s "$cap" ] || { skip "$sc: no capture"; continue; }
  replay "$T/$sc.ref" 1 "$cap"
  for n in 1 4 16 0 auto0 auto1h; do
    replay "$T/$sc.h$n" $n "$cap"
    "${CHK[@]}" "$T/$sc.ref" "$T/$sc.h$n" "$(expect_n $n)" >"$T/chk" 2>&1
    tap_from_checker "$T/chk"
  done
done

# offline collation of a sampled run against the reference's
"$COLLATE" "$T/ar_nvlink.ref" >/dev/null 2>&1
"$COLLATE" "$T/ar_nvlink.h4" >/dev/null 2>&1
"${CHK[@]}" --summary "$T/ar_nvlink.ref" "$T/ar_nvlink.h4" >"$T/chk" 2>&1
tap_from_checker "$T/chk"
# the overhead line says what it leaves out only where calls were only counted
ok "summary.log, 1 call in 4 timed: the overhead line says the counted calls' callbacks are left out" \
  grep -Eq 'Estimated overhead .*\(recorded events x per-event cost, all ranks; the callbacks of calls only counted not included(; one-off set-ups timed whole: [0-9.]+)?\)$' \
  "$T/ar_nvlink.h4/summary.log"
ok "summary.log, every call timed: the overhead line has nothing to leave out" \
  grep -Eq 'Estimated overhead .*\(recorded events x per-event cost, all ranks(; one-off set-ups timed whole: [0-9.]+)?\)$' "$T/ar_nvlink.ref/summary.log"

# the MPI tree (untimed_calls travels in the merged numbers), 2 ranks
MPILIB=$LIB/libcollprof-mpi.so
if mpi_preload_ok "$MPILIB"; then
  for n in 1 4; do
    rm -rf "$T/mpi.h$n"
    COLLPROF_OUTPUT_DIR=$T/mpi.h$n COLLPROF_QUIET=1 COLLPROF_HOST_SAMPLE=$n timeout 120 "${MPIRUN[@]}" -np 2 \
      -x COLLPROF_OUTPUT_DIR -x COLLPROF_QUIET -x COLLPROF_HOST_SAMPLE -x COLLPROF_LEAN -x LD_PRELOAD="$MPILIB" \
      "$REPLAY" "$FIX"/ar_nvlink/p*.jsonl >"$T/mpi.h$n.out" 2>&1
    is "$?" 0 "mpirun, 2 ranks, COLLPROF_HOST_SAMPLE=$n: exits 0"
  done
  "${CHK[@]}" --summary "$T/mpi.h1" "$T/mpi.h4" >"$T/chk" 2>&1
  tap_from_checker "$T/chk"
fi
done_testing
