#!/bin/bash
# lines_per_event.sh — cache lines collprof brings into L1 per callback
# when NCCL's own work between two callbacks has pushed its lines out:
# data lines (L1d) and, separately, lines of code (L1i).
# A hot loop (make bench, instr_per_event.sh) keeps every line the plugin
# touches in L1; in a real job each callback finds them gone (on 4 H200s
# the application thread's callbacks took 1.6-2.4x their hot-loop time,
# session 25), so the lines a callback touches are a cost of their own;
# test/gpu/overhead.sh's lines-I-D-* configurations price a line on a GPU
# host.
# cachegrind (deterministic) runs collprof-bench with
# COLLPROF_BENCH_POLLUTE=64 (64 KiB written before every callback: an
# empty simulated 32 KiB L1d) and COLLPROF_BENCH_IPOLLUTE=64 (64 KiB of
# code run before every callback: an empty 32 KiB L1i) for collprof and
# the do-nothing plugin; the difference in misses, divided by the
# callbacks (starts, stops, states), is what collprof touches per
# callback; then the same split by callback (start, stop, state) from
# collprof's own functions.
#   test/bench/lines_per_event.sh [BUILD_DIR]     (needs valgrind)
#   MASK=default test/bench/lines_per_event.sh    collprof's defaults (mask
#                                                 4031, KernelCh on one call
#                                                 in 16); default MASK=4095:
#                                                 every type on every call
set -u
# every call timed, as the figures quoted from this script were measured
# (collprof's default, COLLPROF_HOST_SAMPLE=auto, would time 1 in 64 here)
export COLLPROF_HOST_SAMPLE=${COLLPROF_HOST_SAMPLE:-1}
# no GPU sampling start delay: it would cover the whole of the bench's run
export COLLPROF_GPU_SAMPLE_DELAY_MS=${COLLPROF_GPU_SAMPLE_DELAY_MS:-0}
B=$(cd "${1:-${COLLPROF_BUILD:-build}}" && pwd) || exit 2
N=2000           # calls; the bench adds 2000 warm-up calls
MASK=${MASK:-4095}
command -v valgrind >/dev/null || { echo "lines_per_event.sh: valgrind not found" >&2; exit 2; }
run() {          # PLUGIN TRACE -> "d1_misses i1_misses starts states" and leaves $d/cg.out
  local pl=$1 tr=$2
  local env=(NCCL_PROFILE_EVENT_MASK=$MASK COLLPROF_GPU_SAMPLE=${GPU_SAMPLE:-1})
  # collprof's defaults: no mask set (the do-nothing plugin gets 4031)
  [ "$MASK" = default ] && env=(NCCL_PROFILE_EVENT_MASK=4031) &&
    [[ $pl == */libcollprof.so ]] && env=(-u NCCL_PROFILE_EVENT_MASK -u COLLPROF_GPU_SAMPLE)
  (cd "$d" && env "${env[@]}" COLLPROF_BENCH_POLLUTE=64 COLLPROF_BENCH_IPOLLUTE=64 COLLPROF_QUIET=1 \
     COLLPROF_TRACE=$tr COLLPROF_TRACE_BUFFER=1048576 COLLPROF_OUTPUT_DIR="$d/out" \
     valgrind --tool=cachegrind --cache-sim=yes --D1=32768,8,64 --I1=32768,8,64 \
     --cachegrind-out-file="$d/cg.out" \
     "$B/bin/collprof-bench" --child "$pl" 1 $N > "$d/res" 2>/dev/null)
  local ev st dm im
  read -r _ ev st _ < "$d/res"
  dm=$(awk '/^summary:/{print $6 + $9}' "$d/cg.out")
  im=$(awk '/^summary:/{print $3}' "$d/cg.out")
  echo "$dm $im $ev $st"
}
# collprof's own functions, by callback: misses per start, stop, state
# (columns of cg_annotate: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw file:fn)
split() {
  cg_annotate --threshold=0 --auto=no "$d/cg.out" 2>/dev/null | sed 's/( *[0-9.]*%)//g' |
    awk -v s="$1" -v e="$2" '$10 ~ /\/src\// {
      f = $10; sub(/.*:/, "", f); gsub(",", "", $2); gsub(",", "", $5); gsub(",", "", $8)
      k = (f ~ /start/) ? "start" : (f ~ /stop/) ? "stop" : (f ~ /state/) ? "state" : "other"
      dm[k] += $5 + $8; im[k] += $2 }
      END { printf "  data: per start %.1f, per stop %.1f, per state %.1f; ", dm["start"] / e, dm["stop"] / e, dm["state"] / s
            printf "code: per start %.1f, per stop %.1f, per state %.1f (collprof functions only)\n",
            im["start"] / e, im["stop"] / e, im["state"] / s }'
}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
# Per callback of each run: a plugin may change what NCCL (the bench)
# emits (collprof's GPU sampling turns KernelCh on for some calls).
scale=$(( (N + 2000) / N ))           # warm-up calls were recorded too
read -r d0 i0 ev st <<<"$(run "$B/lib/libnccl-profiler-noop.so" 0)"
[ -n "${ev:-}" ] && [ "$ev" -gt 0 ] || { echo "lines_per_event.sh: the bench gave no result" >&2; exit 1; }
cbs0=$(( (2 * ev + st) * scale ))
echo "NCCL_PROFILE_EVENT_MASK=$MASK: the do-nothing plugin got $cbs0 callbacks"
for tr in 0 1; do
  read -r dm im ev st <<<"$(run "$B/lib/libcollprof.so" $tr)"
  cbs=$(( (2 * ev + st) * scale ))
  printf 'collprof, trace %s: %s L1d lines and %s L1i lines per callback (%d callbacks)\n' \
    "$([ $tr = 1 ] && echo on' ' || echo off)" \
    "$(awk -v a="$dm" -v b="$d0" -v c="$cbs" -v c0="$cbs0" 'BEGIN{printf "%.1f", a / c - b / c0}')" \
    "$(awk -v a="$im" -v b="$i0" -v c="$cbs" -v c0="$cbs0" 'BEGIN{printf "%.1f", a / c - b / c0}')" "$cbs"
  split $(( st * scale )) $(( ev * scale ))
done
