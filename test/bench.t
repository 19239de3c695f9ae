#!/bin/bash
# bench.t — collprof-bench runs (a quick pass, not a measurement): every
# configuration (collprof with and without the trace, the do-nothing
# plugin; 1 and 2 threads) gives a figure.  `make bench` is the measurement.
. "$(dirname "$0")/tap.sh"
[ -z "${SAN:-}" ] || skip_all "not under SAN=$SAN (the bench dlopens the plugin)"
[ -x "$BIN/collprof-bench" ] || skip_all "collprof-bench not built"
COLLPROF_BUILD=$B "$BIN/collprof-bench" --quick >"$T/out" 2>"$T/err"
rc=$?
sed 's/^/# /' "$T/out"
is "$rc" 0 "collprof-bench --quick exits 0"
for c in "collprof, trace on" "collprof, trace off" "host sample auto, trace off" "do-nothing plugin"; do
  for t in 1 2; do
    ok "$c, T=$t: ns/event reported" \
      awk -v c="$c" -v t="$t" 'index($0, c) == 1 { n = split($0, f, " +"); for (i = 1; i <= n; i++) if (f[i] == t && f[i+1] + 0 > 0) found = 1 } END { exit !found }' "$T/out"
  done
done
# The goal lines judge the rows as printed: the verdict follows from the
# number and the bound, and the trace-off line names the floor.
ok "four goal lines, each verdict what its number and bound say" \
  awk '/^goal: / { n++; v = $0; sub(/.*: /, "", v)
         if (match($0, /: [0-9.]+ ns\/event \(<= [0-9]+: (met|MISSED)\)/)) {
           split(substr($0, RSTART + 2, RLENGTH - 3), f, /[ :(<=]+/); val = f[1]; bound = f[3]; verdict = f[4]
           if ((val <= bound) != (verdict == "met")) bad = 1
         } else if (match($0, /: [0-9.]+x one \(>= 1\.8x: (met|MISSED)\)/)) {
           split(substr($0, RSTART + 2, RLENGTH - 3), f, /[x (>=:]+/); val = f[1]; verdict = f[4]
           if ((val >= 1.8) != (verdict == "met")) bad = 1
         } else bad = 1 }
       END { exit bad || n != 4 }' "$T/out"
# ev/call, the table's last column: the driver's events per call as the
# plugin's mask let it send them.  The do-nothing plugin leaves the mask
# (4095) alone: the whole tree, 14 events, at T=1 and T=2; a proxy row's
# application thread sends its 5.  With lean calls (host sampling) collprof
# asks for fewer at T=1 (the legend says so).
evpc() { awk -v c="$1" -v t="$2" 'index($0, c) == 1 { r = substr($0, length(c) + 1); n = split(r, f, " +"); if (f[2] == t) print f[n] }' "$T/out"; }
is "$(evpc "do-nothing plugin" 1) $(evpc "do-nothing plugin" 2)" "14.0 14.0" "ev/call: the do-nothing plugin gets the whole tree, 14 events a call"
is "$(evpc "with proxy, do-nothing" 1)" "5.0" "ev/call: a proxy row's application thread sends 5 events a call"
ok "ev/call: host sampling's lean calls ask for fewer events at T=1" \
  awk -v v="$(evpc "host sample auto, trace off" 1)" 'BEGIN { exit !(v + 0 > 0 && v + 0 < 14) }'
ok "the legend explains ev/call" grep -q '^ev/call: events started per API call on a calling thread' "$T/out"
ok "the trace-off goal line gives the floor beside it" grep -Eq '^goal: trace off, T=1: .*; floor, trace off: [0-9.]+, which is (within|above) the goal$' "$T/out"
ok "the machine's own 2-thread scaling (a spin loop) is reported" \
  grep -Eq '^this machine: 2 threads spinning on registers .* ran [0-9]+\.[0-9]+x the$' "$T/out"
# The proxy rows: one application thread and its proxy thread per
# communicator, T=1 only, own against the do-nothing plugin run that way.
for c in "with proxy, trace on" "with proxy, trace off" "with proxy, deferred"; do
  ok "$c: ns/event and own ns reported" \
    awk -v c="$c" 'index($0, c) == 1 { r = substr($0, length(c) + 1); split(r, f, " +"); if (f[2] == 1 && f[3] + 0 > 0 && f[4] ~ /^-?[0-9]/) found = 1 } END { exit !found }' "$T/out"
done
ok "proxy rows only at T=1" \
  awk '/^with proxy, [a-z-]+( [a-z-]+)? +[0-9]+ +[0-9.]+/ { r = $0; sub(/^with proxy, [a-z-]+( [a-z-]+)? +/, "", r); split(r, f, " +"); if (f[1] != 1) bad = 1; n++ } END { exit bad || n != 4 }' "$T/out"
# The proxy thread sends exactly its part of every call (2 KernelCh and a
# ProxyCtrl; the do-nothing plugin leaves the mask alone), and under
# collprof each KernelCh finds its Coll in the application thread's pool.
res=$(COLLPROF_BENCH_PROXY=1 NCCL_PROFILE_EVENT_MASK=4095 "$BIN/collprof-bench" --child "$B/lib/libnccl-profiler-noop.so" 1 100)
is "$(echo "$res" | awk '/^RESULT/{print $2, $6}')" "500 6300" "proxy mode: 5 application and 3 proxy events per call (2100 calls with the warm-up)"
mkdir -p "$T/px"
(cd "$T/px" && COLLPROF_BENCH_PROXY=1 NCCL_PROFILE_EVENT_MASK=4095 COLLPROF_GPU_SAMPLE=1 COLLPROF_TRACE=0 COLLPROF_QUIET=1 \
  COLLPROF_OUTPUT_DIR="$T/px/o" "$BIN/collprof-bench" --child "$B/lib/libcollprof.so" 1 100 >/dev/null)
ok "proxy mode under collprof: KernelCh under its Coll, every one of 4200 counted" \
  grep -q '"path":"GroupApi/CollApi:AllReduce/Coll:AllReduce/KernelCh",.*"calls":4200,' "$T"/px/o/*.jsonl
# Slice mode (bench.h): 3 pairs of slices; RESULT counts the all-thread
# slices only (2 threads x 3 slices x 100 calls x 14 events), SCALE one
# ratio per pair, and the T=2 rows of the table use it.
res=$(COLLPROF_BENCH_SLICES=3 NCCL_PROFILE_EVENT_MASK=4095 "$BIN/collprof-bench" --child "$B/lib/libnccl-profiler-noop.so" 2 300)
is "$(echo "$res" | awk '/^RESULT/{print $2}')" "8400" "slice mode: RESULT counts the all-thread slices' events"
ok "slice mode: a SCALE line with a ratio for each of 3 pairs" \
  awk '/^SCALE/ { if ($2 + 0 > 0 && $3 == 3) found = 1 } END { exit !found }' <<<"$res"
ok "the T=2 rows' vs T=1 comes from slices (the legend says so)" grep -q '^vs T=1: within the T=2 run, 5 pairs of slices' "$T/out"
# Binding (test/bench/bench_bind.c): by default each calling thread runs
# on a CPU of its own after the warm-up; the slice detail names the CPUs.
ok "the legend says the calling threads are bound" grep -q '^binding: each calling thread bound to a CPU of its own' "$T/out"
ok "an unbound trace-on row is measured too" grep -Eq '^trace on, unbound +2 ' "$T/out"
if [ "$(nproc)" -ge 2 ]; then
  COLLPROF_BENCH_BIND=1 COLLPROF_BENCH_SLICE_DETAIL=1 COLLPROF_BENCH_SLICES=3 NCCL_PROFILE_EVENT_MASK=4095 \
    "$BIN/collprof-bench" --child "$B/lib/libnccl-profiler-noop.so" 2 300 >/dev/null 2>"$T/detail"
  sed 's/^/# /' "$T/detail"
  ok "bound: 9 slice lines, each thread always on one CPU, the two on different CPUs" \
    awk '/^slice [0-9]+ +(lone|all) +thread [01] on CPU [0-9]+:/ { n++;
           match($0, /on CPU [0-9]+/); cpu = substr($0, RSTART + 7, RLENGTH - 7); t = ($0 ~ /thread 0 /) ? 0 : 1;
           if ((t in seen) && seen[t] != cpu) bad = 1; seen[t] = cpu }
         END { exit !(n == 9 && !bad && (0 in seen) && (1 in seen) && seen[0] != seen[1]) }' "$T/detail"
else
  skip "bound: needs 2 CPUs"
fi
taskset -c 0 env COLLPROF_BENCH_BIND=1 NCCL_PROFILE_EVENT_MASK=4095 "$BIN/collprof-bench" --child "$B/lib/libnccl-profiler-noop.so" 2 100 >"$T/one" 2>"$T/one.err"
ok "2 threads on 1 CPU: one line, left unbound, and a result" \
  bash -c "grep -q '^collprof-bench: 2 threads on 1 CPUs: threads left unbound$' '$T/one.err' && grep -q '^RESULT' '$T/one'"
# writer_share.sh (the trace writer's share of busy cores, by nice value)
# runs and prints a median line for each nice value asked for.
THREADS=2 "$TOP/test/bench/writer_share.sh" 1 0 10 >"$T/share" 2>&1
sed 's/^/# /' "$T/share"
ok "writer_share.sh: calling threads' and writer's shares for nice 0 and 10" \
  bash -c "grep -Eq '^  nice 0: a calling thread [0-9.]+ of a core, the writer [0-9.]+$' '$T/share' &&
           grep -Eq '^  nice 10: a calling thread [0-9.]+ of a core, the writer [0-9.]+$' '$T/share'"
# ablate.sh reads the own-ns column of that same table: its parser must
# give exactly the figures the table shows (a column added to the table
# once made it read Mevents/s instead).
read -r on rh off on2 off2 <<<"$("$TOP/test/bench/ablate.sh" --parse <"$T/out")"
own_col() { awk -v c="$1" 'index($0, c) == 1 { r = substr($0, length(c) + 1); split(r, f, " +"); if (f[2] == 1) print f[4] }' "$T/out"; }
is "$on" "$(own_col "collprof, trace on")" "ablate.sh --parse: trace on's own ns"
is "$rh" "$(own_col "trace on, ring holds run")" "ablate.sh --parse: ring-holds-run's own ns"
is "$off" "$(own_col "collprof, trace off")" "ablate.sh --parse: trace off's own ns"
x2_col() { awk -v c="$1" 'index($0, c) == 1 { r = substr($0, length(c) + 1); split(r, f, " +"); if (f[2] == 2) print f[6] }' "$T/out"; }
is "$on2" "$(x2_col "collprof, trace on")" "ablate.sh --parse: trace on's T=2 scaling"
is "$off2" "$(x2_col "collprof, trace off")" "ablate.sh --parse: trace off's T=2 scaling"
# test/bench/ablate.sh's measuring-only variants are textual patches: each
# must still apply to this tree (a stale one would silently measure nothing).
if command -v python3 >/dev/null; then
  "$TOP/test/bench/ablate.sh" --check >"$T/abl" 2>&1
  rc=$?
  sed 's/^/# /' "$T/abl"
  is "$rc" 0 "every ablate.sh variant's patch applies to this tree"
fi
done_testing
