#!/bin/bash
# instr_per_event.sh — instructions collprof adds per event on the calling
# thread, counted by callgrind (deterministic, unlike the timings of
# `make bench` on a shared machine): the bench thread's instructions in its
# event loop with collprof, minus the same with the do-nothing plugin,
# divided by the events (warm-up included), with the trace off and on.  The
# trace-on run gets a ring that holds the whole run, so no record is
# dropped (a dropped record costs less than a written one).
#   test/bench/instr_per_event.sh [BUILD_DIR]     (needs valgrind)
set -u
B=$(cd "${1:-${COLLPROF_BUILD:-build}}" && pwd) || exit 2
N=20000          # calls; the bench adds 2000 warm-up calls
command -v valgrind >/dev/null || { echo "instr_per_event.sh: valgrind not found" >&2; exit 2; }
loop_ir() {      # PLUGIN ENV... -> "instructions events"
  local d pl=$1; shift
  d=$(mktemp -d)
  (cd "$d" && env "$@" NCCL_PROFILE_EVENT_MASK=4095 COLLPROF_GPU_SAMPLE=1 COLLPROF_QUIET=1 \
     COLLPROF_OUTPUT_DIR="$d/out" valgrind --tool=callgrind --separate-threads=yes \
     --callgrind-out-file="$d/cg.out" "$B/bin/collprof-bench" --child "$pl" 1 $N > "$d/res" 2>/dev/null)
  local ev ir
  ev=$(awk '/^RESULT/{print $2}' "$d/res")
  ir=$(for f in "$d"/cg.out-*; do callgrind_annotate --inclusive=yes "$f" 2>/dev/null |
       awk '/bench_tree.c:one_call \[/ && !o {gsub(",","",$1); o=$1} END{print o+0}'; done | sort -n | tail -1)
  rm -rf "$d"
  echo "$ir $ev"
}
read -r n0 ev <<<"$(loop_ir "$B/lib/libnccl-profiler-noop.so" X=1)"
[ -n "${ev:-}" ] && [ "$ev" -gt 0 ] || { echo "instr_per_event.sh: the bench gave no result" >&2; exit 1; }
evt=$(( ev * (N + 2000) / N ))
printf 'do-nothing plugin: %d instructions per event (the driver)\n' $(( n0 / evt ))
for tr in 0 1; do
  read -r ir _ <<<"$(loop_ir "$B/lib/libcollprof.so" COLLPROF_TRACE=$tr COLLPROF_TRACE_BUFFER=1048576)"
  printf 'collprof, trace %s: %d instructions per event on the calling thread (own)\n' \
    "$([ $tr = 1 ] && echo on || echo off)" $(( (ir - n0) / evt ))
done
