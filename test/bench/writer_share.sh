#!/bin/bash
# writer_share.sh — how the cores are shared between the calling threads
# and the trace writer when the calling threads keep every core busy:
# collprof-bench's child on T threads (default: as many as cores) for a
# long run, each thread's CPU time read from /proc over one second of it,
# for each writer nice value given (COLLPROF_TRACE_NICE; default "0 10").
#   test/bench/writer_share.sh [ROUNDS [NICE...]]      (needs a build)
# Prints per round and nice value: each calling thread's share of a core,
# and the writer's; then the medians.  What it shows is the scheduler's
# doing, so it is a figure of this machine (and of its other tenants).
set -u
# every call timed, as the figures quoted from this script were measured
# (collprof's default, COLLPROF_HOST_SAMPLE=auto, would time 1 in 64 here)
export COLLPROF_HOST_SAMPLE=${COLLPROF_HOST_SAMPLE:-1}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
B=${COLLPROF_BUILD:-$TOP/build}
ROUNDS=${1:-3}
shift 2>/dev/null
NICES=("$@")
[ ${#NICES[@]} -gt 0 ] || NICES=(0 10)
T=${THREADS:-$(nproc)}
HZ=$(getconf CLK_TCK)
W=$(mktemp -d "${TMPDIR:-/tmp}/collprof-share.XXXXXX")
trap 'rm -rf "$W"' EXIT
cpu_of() {   # pid -> "name ticks" per thread
  for s in /proc/"$1"/task/*/stat; do
    awk '{ l = index($0, "("); r = index($0, ")"); n = substr($0, l + 1, r - l - 1);
           split(substr($0, r + 2), f, " "); print n, f[12] + f[13] }' "$s" 2>/dev/null
  done
}
for r in $(seq 1 "$ROUNDS"); do
  for n in "${NICES[@]}"; do
    rm -rf "$W/o"
    COLLPROF_TRACE_NICE=$n NCCL_PROFILE_EVENT_MASK=4095 COLLPROF_GPU_SAMPLE=1 COLLPROF_QUIET=1 \
      COLLPROF_OUTPUT_DIR="$W/o" "$B/bin/collprof-bench" --child "$B/lib/libcollprof.so" "$T" 20000000 \
      >/dev/null 2>&1 &
    pid=$!
    sleep 0.7                               # past start-up and the ring's first fill
    a=$(cpu_of $pid)
    sleep 1
    b=$(cpu_of $pid)
    kill $pid 2>/dev/null
    wait $pid 2>/dev/null
    paste -d' ' <(echo "$a") <(echo "$b") | awk -v n="$n" -v hz="$HZ" -v r="$r" '
      $1 == "collprof-bench" { d = ($4 - $2) / hz; if (d > 0.02) app = app sprintf(" %.2f", d) }
      $1 == "collprof-trace" { w = sprintf("%.2f", ($4 - $2) / hz) }
      END { printf "round %d nice %-2s calling threads%s  writer %s\n", r, n, app, w }'
  done
done | tee "$W/all"
echo "medians:"
awk '{ n = $4; for (i = 7; i < NF - 1; i++) a[n] = a[n] " " $i; w[n] = w[n] " " $NF }
     END { for (n in a) print n, a[n], "|", w[n] }' "$W/all" | sort -n | while read -r n rest; do
  app=${rest%%|*}; wr=${rest#*|}
  ma=$(tr ' ' '\n' <<<"$app" | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
  mw=$(tr ' ' '\n' <<<"$wr" | grep . | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }')
  echo "  nice $n: a calling thread $ma of a core, the writer $mw"
done
