#!/bin/bash
# mpi_sanitized.t — the MPI layer (libcollprof-mpi.so: the MPI_Init and
# MPI_Finalize hooks, clock sync, the tree collation, the summary writers)
# under AddressSanitizer+UBSan or ThreadSanitizer, in real mpirun runs.
# Only with SAN=address or SAN=thread: the plain build's runs are
# mpi_collate.t's.  Each rank preloads the sanitizer's runtime before the
# sanitized library (it must come first in the process), and the replay
# and the plugin are the sanitized builds too.  mpirun and Open MPI
# themselves are not instrumented.
#   - replays of the captures on 4 ranks, on 2 ranks with several
#     communicators per process, and with forced hash collisions
#   - the fuzz (replay_synth_fuzz.c) on 3 ranks: random misuse on 3 threads
#     per rank, then the collation over thousands of random paths; and with
#     MPI_Finalize (the collation) while those threads go on calling
# Each: mpirun exits 0, no sanitizer report, every output parses,
# reductions and run counters = rank files, offline summary = online.
. "$(dirname "$0")/tap.sh"

[ -n "${SAN:-}" ] || skip_all "runs under SAN=address or SAN=thread (plain builds: mpi_collate.t)"
need_mpi_collate
case $SAN in
  address) rtname=libasan.so ;;
  thread) rtname=libtsan.so ;;
  *) skip_all "SAN=$SAN: no runtime known" ;;
esac
RT=$(${CC:-gcc} -print-file-name=$rtname)
RT=$(readlink -f "$RT" 2>/dev/null)
[ -e "$RT" ] || skip_all "no $rtname from ${CC:-gcc}"

# leaks: Open MPI's own allocations at exit are not collprof's
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
REPORT='ERROR: AddressSanitizer|runtime error|WARNING: ThreadSanitizer|ThreadSanitizer:|LeakSanitizer|segmentation|core dumped|exited on signal'

PRELOAD="$RT $MPILIB"
MPI_TIMEOUT=300

# run NAME NP ENV... -- PROGRAM ARGS...: mpirun_case (tap.sh), then checks
run() {
  local name=$1 np=$2; shift 2
  mpirun_case "$name" "$np" ASAN_OPTIONS UBSAN_OPTIONS TSAN_OPTIONS "$@"
  is "$(grep -icE "$REPORT" "$T/$name.out")" 0 "$name: no sanitizer report, no crash"
  grep -iE -m 5 -A 8 "$REPORT" "$T/$name.out" | sed 's/^/#   /'
  ok "$name: summary.json, summary.log and every rank-file line parse" python3 -c '
import json, sys
json.load(open(sys.argv[1] + "/summary.json"))
assert open(sys.argv[1] + "/summary.log").read().strip()
for f in sys.argv[3:]:
    for l in open(f, "rb"): json.loads(l)
assert len(sys.argv[3:]) == int(sys.argv[2])' "$T/$name" "$np" "$T/$name"/rank*.jsonl
  ok "$name: reductions = rank files" "${CHK[@]}" reduce "$T/$name"
  ok "$name: run counters = rank records" "${CHK[@]}" counters "$T/$name"
  mkdir -p "$T/off_$name"
  cp "$T/$name"/rank*.jsonl "$T/off_$name/"
  local hb=()
  [ "$name" = collide ] && hb=(--hash-bits 4)
  "$COLLATE" -q "${hb[@]}" "$T/off_$name" 2>"$T/off_$name.err"
  is "$?" 0 "$name: the sanitized collprof-collate exits 0 on the rank files"
  ok "$name: offline summary = online summary (all but run end)" "${CHK[@]}" same "$T/$name" "$T/off_$name"
}

run np4 4 -- "$REPLAY" "$FIX"/ag4_net/p*.jsonl
ok "np4: global ids agree (summary.json, summary.log, rank files)" "${CHK[@]}" ids "$T/np4"
ok "np4: rounds = 2, receive <= 3x global set" "${CHK[@]}" collation "$T/np4" 4
run threads 2 -- "$REPLAY" "$FIX"/ar4_threads/p*.jsonl
run collide 2 COLLPROF_HASH_BITS=4 -- "$REPLAY" "$FIX"/ar_net/p*.jsonl
ok "collide: collisions kept apart and reported" "${CHK[@]}" collisions "$T/collide" 4
run fuzz 3 COLLPROF_FUZZ_SEED=3 COLLPROF_HOST_SAMPLE=auto -- "$REPLAY" --mpi --plugin "$LIB/libcollprof.so" \
  --synthetic fuzz --threads 3 --count 10000
run fuzz_fin 3 COLLPROF_FUZZ_SEED=5 COLLPROF_FUZZ_SHUTDOWN=mpi -- "$REPLAY" --mpi --plugin "$LIB/libcollprof.so" \
  --synthetic fuzz --threads 3 --count 10000
ok "fuzz_fin: every event names a path its rank file lists" "${CHK[@]}" pathrefs "$T/fuzz_fin"
"$COLLATE" -q --no-summary --chrome "$T/off_fuzz_fin.chrome.json" "$T/off_fuzz_fin" 2>>"$T/off_fuzz_fin.err"
ok "fuzz_fin: the sanitized Chrome export names every event's path" "${CHK[@]}" pathrefs "$T/off_fuzz_fin" \
  "$T/off_fuzz_fin.chrome.json"
ok "fuzz: misuse was counted (bad_calls > 0)" python3 -c '
import json, sys
assert json.load(open(sys.argv[1]))["bad_calls"] > 0' "$T/fuzz/summary.json"
done_testing
