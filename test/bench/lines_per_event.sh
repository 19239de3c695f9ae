#!/bin/bash
# lines_per_event.sh — cache lines collprof brings into L1 per callback
# when NCCL's own work between two callbacks has pushed its lines out.
# A hot loop (make bench, instr_per_event.sh) keeps every line the plugin
# touches in L1; in a real job each callback finds them gone (on 4 H200s
# the application thread's callbacks took 1.6-2.4x their hot-loop time,
# session 25), so the lines a callback touches are a cost of their own.
# cachegrind (deterministic) runs collprof-bench with
# COLLPROF_BENCH_POLLUTE=64 (64 KiB written before every callback: an
# empty simulated 32 KiB L1) for collprof and the do-nothing plugin; the
# difference in L1 misses (reads and writes), divided by the callbacks
# (starts, stops, states), is what collprof touches per callback; then
# the same split by callback (start, stop, state) from collprof's own
# functions.
#   test/bench/lines_per_event.sh [BUILD_DIR]     (needs valgrind)
set -u
B=$(cd "${1:-${COLLPROF_BUILD:-build}}" && pwd) || exit 2
N=2000           # calls; the bench adds 2000 warm-up calls
command -v valgrind >/dev/null || { echo "lines_per_event.sh: valgrind not found" >&2; exit 2; }
run() {          # PLUGIN TRACE -> "d1_misses starts states" and leaves $d/cg.out
  local pl=$1 tr=$2
  (cd "$d" && COLLPROF_BENCH_POLLUTE=64 NCCL_PROFILE_EVENT_MASK=4095 COLLPROF_GPU_SAMPLE=1 COLLPROF_QUIET=1 \
     COLLPROF_TRACE=$tr COLLPROF_TRACE_BUFFER=1048576 COLLPROF_OUTPUT_DIR="$d/out" \
     valgrind --tool=cachegrind --cache-sim=yes --D1=32768,8,64 --cachegrind-out-file="$d/cg.out" \
     "$B/bin/collprof-bench" --child "$pl" 1 $N > "$d/res" 2>/dev/null)
  local ev st m
  read -r _ ev st _ < "$d/res"
  m=$(awk '/^summary:/{print $6 + $9}' "$d/cg.out")
  echo "$m $ev $st"
}
# collprof's own functions, by callback: D1 misses per start, stop, state
split() {
  cg_annotate --threshold=0 --auto=no "$d/cg.out" 2>/dev/null | sed 's/( *[0-9.]*%)//g' |
    awk -v s="$1" -v e="$2" '$10 ~ /\/src\// {
      f = $10; sub(/.*:/, "", f); gsub(",", "", $5); gsub(",", "", $8)
      k = (f ~ /start/) ? "start" : (f ~ /stop/) ? "stop" : (f ~ /state/) ? "state" : "other"
      m[k] += $5 + $8 }
      END { printf "per start %.1f, per stop %.1f, per state %.1f (collprof functions only)\n",
            m["start"] / e, m["stop"] / e, m["state"] / s }'
}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
read -r m0 ev st <<<"$(run "$B/lib/libnccl-profiler-noop.so" 0)"
[ -n "${ev:-}" ] && [ "$ev" -gt 0 ] || { echo "lines_per_event.sh: the bench gave no result" >&2; exit 1; }
scale=$(( (N + 2000) / N ))           # warm-up calls were recorded too
cbs=$(( (2 * ev + st) * scale ))
for tr in 0 1; do
  read -r m _ _ <<<"$(run "$B/lib/libcollprof.so" $tr)"
  printf 'collprof, trace %s: %s L1 lines per callback (%d callbacks), ' \
    "$([ $tr = 1 ] && echo on || echo off)" "$(awk -v a="$m" -v b="$m0" -v c="$cbs" 'BEGIN{printf "%.1f", (a - b) / c}')" "$cbs"
  split $(( st * scale )) $(( ev * scale ))
done
