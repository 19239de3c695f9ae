#!/bin/bash
# phase_timing.t — the diagnostic phase-timing build (src/phase_timing.h)
# builds, clocks the callbacks it should and adds up; the ordinary build
# has none of it.
. "$(dirname "$0")/tap.sh"
[ -z "${SAN:-}" ] || skip_all "not under SAN=$SAN (the bench dlopens the plugin)"
[ -x "$BIN/collprof-bench" ] || skip_all "collprof-bench not built"
command -v make >/dev/null || skip_all "make not found"
PH=$T/ph
make -s -C "$TOP" BUILD="$PH" CFLAGS=-DCP_PHASE_TIMING "$PH/lib/libcollprof.so" >"$T/make" 2>&1
rc=$?
sed 's/^/# /' "$T/make" | tail -n 20
is "$rc" 0 "make BUILD=... CFLAGS=-DCP_PHASE_TIMING builds libcollprof.so"
bench() {   # LIB DIR -> stderr in DIR/err, the trace in DIR/o
  mkdir -p "$2"
  (cd "$2" && NCCL_PROFILE_EVENT_MASK=4095 COLLPROF_GPU_SAMPLE=1 COLLPROF_QUIET=1 COLLPROF_TRACE=1 \
    COLLPROF_TRACE_BUFFER=262144 COLLPROF_OUTPUT_DIR="$2/o" "$BIN/collprof-bench" --child "$1" 1 2000 >"$2/out" 2>"$2/err")
}
bench "$PH/lib/libcollprof.so" "$T/a"
line=$(grep '^collprof-phases:' "$T/a/err")
ok "one collprof-phases line (one thread made the callbacks)" test "$(grep -c '^collprof-phases:' "$T/a/err")" = 1
diag "${line:0:400}"
# Every start the fast path took is counted: at most the events recorded
# (the rank record), and nearly all of them in the bench's trees.
rec=$(grep -ho '"eventsRecorded":[0-9]*' "$T"/a/o/*.jsonl | tail -n 1 | cut -d: -f2)
starts=$(echo "$line" | sed -n 's/.* start \([0-9]*\):.*/\1/p')
ok "starts clocked ($starts) within 90-100% of the events recorded ($rec)" \
  awk -v s="${starts:-0}" -v r="${rec:-0}" 'BEGIN { exit !(r > 0 && s <= r && s >= 0.9 * r) }'
stops=$(echo "$line" | sed -n 's/.* stop \([0-9]*\):.*/\1/p')
ok "stops clocked ($stops) as many as starts" test "${stops:-0}" -ge $(( ${starts:-1} - 1 ))
ok "states clocked" awk -v l="$line" 'BEGIN { exit !(match(l, / state [0-9]+:/) && substr(l, RSTART + 7) + 0 > 1000) }'
# Each callback's parts add up to its total, none negative, the floor > 0.
ok "start, stop and state: the parts add up to the total, none negative" \
  awk -v l="$line" 'BEGIN {
    if (!match(l, /floor [0-9.]+ ns/) || substr(l, RSTART + 6) + 0 <= 0) exit 1
    n = split(l, seg, "|"); if (n != 3) exit 1
    for (i = 1; i <= n; i++) {
      s = seg[i]; sub(/.*(start|stop|state) [0-9]+:/, "", s)
      split(s, tot, "="); m = split(tot[1], w, " "); sum = 0
      for (j = 2; j <= m; j += 2) { if (w[j] + 0 < 0) exit 1; sum += w[j] }
      if (sum - (tot[2] + 0) > 0.1 * (m / 2) || (tot[2] + 0) - sum > 0.1 * (m / 2)) exit 1
    }
  }'
bench "$LIB/libcollprof.so" "$T/b"
ok "the ordinary build prints no collprof-phases line" bash -c "! grep -q collprof-phases '$T/b/err'"
ok "the ordinary build has no phase-timing code" bash -c "! nm '$LIB/libcollprof.so' | grep -q cp_ph_add"
done_testing
