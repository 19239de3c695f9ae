#!/bin/bash
# instr_per_event.sh — instructions collprof adds per event on the calling
# thread, counted by callgrind (deterministic, unlike the timings of
# `make bench` on a shared machine): the bench thread's instructions in its
# event loop with collprof, minus the same with the do-nothing plugin,
# divided by the events (warm-up included), with the trace off and on.  The
# trace-on run gets a ring that holds the whole run, so no record is
# dropped (a dropped record costs less than a written one); from that run
# also the trace writer's instructions per JSON line.  Then NCCL's proxy
# thread (COLLPROF_BENCH_PROXY=1, mask 4063: every type but ProxyCtrl, so
# its work is the KernelCh alone): instructions per KernelCh (start, state
# 22, stop) over the do-nothing plugin's, trace on, the ring's one-off
# setup left out -- what NCCL's calls wait for when KernelCh is on
# (share/doc/performance.md, "KernelCh on every call: two regimes").
#   test/bench/instr_per_event.sh [BUILD_DIR]     (needs valgrind)
#   MASK=4031 GPU_SAMPLE=0 COLLPROF_HOST_SAMPLE=64 test/bench/instr_per_event.sh
#                 the default mask, GPU sampling off, 63 calls in 64 only
#                 counted (default: MASK=4095, GPU_SAMPLE=1, every call timed)
# The plugin's one-off self-cost measurement (selfcost.c, run inside the
# first callback) is left out of the count.
set -u
# every call timed, as the figures quoted from this script were measured
# (collprof's default, COLLPROF_HOST_SAMPLE=auto, would time 1 in 64 here)
export COLLPROF_HOST_SAMPLE=${COLLPROF_HOST_SAMPLE:-1}
# no GPU sampling start delay: it would cover the whole of the bench's run
export COLLPROF_GPU_SAMPLE_DELAY_MS=${COLLPROF_GPU_SAMPLE_DELAY_MS:-0}
# no cost windows (src/cost_sample.c): they open by the wall clock, and
# under valgrind, which runs one thread at a time, a window stays open
# until the window thread is scheduled again, so how many callbacks it
# times (and the count) changed from run to run: 692 and 802 instructions
# per event, trace off, on one build
export COLLPROF_COST_SAMPLE_MS=${COLLPROF_COST_SAMPLE_MS:-0}
B=$(cd "${1:-${COLLPROF_BUILD:-build}}" && pwd) || exit 2
N=20000          # calls; the bench adds 2000 warm-up calls
CHANNELS=2       # KernelCh per call (test/bench/bench_tree.c)
command -v valgrind >/dev/null || { echo "instr_per_event.sh: valgrind not found" >&2; exit 2; }
# incl FUNC: FUNC's inclusive instructions in callgrind_annotate --inclusive
# output on stdin (the largest count on a "N (P%) file:FUNC" line: the
# listing names a file with and without its folder, self and inclusive).
incl() {
  # (the percentage may be "( 3.99%)", two fields: look at every field)
  awk -v fn="$1" '{for (i = 2; i <= NF; i++) if ($i ~ (":" fn "$")) {gsub(",", "", $1); if ($1 + 0 > m) m = $1 + 0}}
                  END {print m + 0}'
}
loop_ir() {      # PLUGIN ENV... -> "instructions events"
  local d pl=$1; shift
  d=$(mktemp -d)
  (cd "$d" && env "$@" NCCL_PROFILE_EVENT_MASK="${MASK:-4095}" COLLPROF_GPU_SAMPLE="${GPU_SAMPLE:-1}" COLLPROF_QUIET=1 \
     COLLPROF_OUTPUT_DIR="$d/out" valgrind --tool=callgrind --separate-threads=yes \
     --callgrind-out-file="$d/cg.out" "$B/bin/collprof-bench" --child "$pl" 1 $N > "$d/res" 2>/dev/null)
  local ev ir js lines
  ev=$(awk '/^RESULT/{print $2}' "$d/res")
  ir=$(for f in "$d"/cg.out-*; do
         a=$(callgrind_annotate --inclusive=yes "$f" 2>/dev/null)
         echo $(( $(incl one_call <<<"$a") - $(incl cp_selfcost_measure <<<"$a") ))
       done | sort -n | tail -1)
  # the trace writer: instructions formatting JSON lines, on whichever thread
  js=$(for f in "$d"/cg.out-*; do callgrind_annotate --inclusive=yes "$f" 2>/dev/null |
       incl cp_trace_json; done |
       awk '{s+=$1} END{print s+0}')
  lines=$(cat "$d"/out/*.jsonl 2>/dev/null | wc -l)
  rm -rf "$d"
  echo "$ir $ev $js $lines"
}
read -r n0 ev _ _ <<<"$(loop_ir "$B/lib/libnccl-profiler-noop.so" X=1)"
[ -n "${ev:-}" ] && [ "$ev" -gt 0 ] || { echo "instr_per_event.sh: the bench gave no result" >&2; exit 1; }
evt=$(( ev * (N + 2000) / N ))
printf 'do-nothing plugin: %d instructions per event (the driver)\n' $(( n0 / evt ))
for tr in 0 1; do
  read -r ir _ js lines <<<"$(loop_ir "$B/lib/libcollprof.so" COLLPROF_TRACE=$tr COLLPROF_TRACE_BUFFER=1048576)"
  printf 'collprof, trace %s: %d instructions per event on the calling thread (own)\n' \
    "$([ $tr = 1 ] && echo on || echo off)" $(( (ir - n0) / evt ))
  [ "$tr" = 1 ] && [ "${lines:-0}" -gt 0 ] &&
    printf 'trace writer: %d instructions per JSON line formatted (%d lines; the writer thread, not the caller)\n' \
      $(( js / lines )) "$lines"
done

# proxy thread: proxy_part's inclusive instructions on the thread that ran
# it, less the trace ring's first attach (a one-off memset of the ring)
proxy_ir() {     # PLUGIN ENV... -> instructions
  local d pl=$1; shift
  d=$(mktemp -d)
  (cd "$d" && env "$@" COLLPROF_BENCH_PROXY=1 NCCL_PROFILE_EVENT_MASK=4063 COLLPROF_GPU_SAMPLE=1 COLLPROF_QUIET=1 \
     COLLPROF_OUTPUT_DIR="$d/out" valgrind --tool=callgrind --separate-threads=yes \
     --callgrind-out-file="$d/cg.out" "$B/bin/collprof-bench" --child "$pl" 1 $N > "$d/res" 2>/dev/null)
  for f in "$d"/cg.out-*; do
    a=$(callgrind_annotate --inclusive=yes "$f" 2>/dev/null)
    echo $(( $(incl proxy_part <<<"$a") - $(incl ring_get <<<"$a") ))
  done | sort -n | tail -1
  rm -rf "$d"
}
p0=$(proxy_ir "$B/lib/libnccl-profiler-noop.so" X=1)
p1=$(proxy_ir "$B/lib/libcollprof.so" COLLPROF_TRACE=1 COLLPROF_TRACE_BUFFER=1048576)
kc=$(( (N + 2000) * CHANNELS ))
printf 'proxy thread: %d instructions per KernelCh (start, state, stop; collprof %d, do-nothing %d per KernelCh with the driver)\n' \
  $(( (p1 - p0) / kc )) $(( p1 / kc )) $(( p0 / kc ))
