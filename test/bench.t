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
for c in "collprof, trace on" "collprof, trace off" "do-nothing plugin"; do
  for t in 1 2; do
    ok "$c, T=$t: ns/event reported" \
      awk -v c="$c" -v t="$t" 'index($0, c) == 1 { n = split($0, f, " +"); for (i = 1; i <= n; i++) if (f[i] == t && f[i+1] + 0 > 0) found = 1 } END { exit !found }' "$T/out"
  done
done
# ablate.sh reads the own-ns column of that same table: its parser must
# give exactly the figures the table shows (a column added to the table
# once made it read Mevents/s instead).
read -r on rh off <<<"$("$TOP/test/bench/ablate.sh" --parse <"$T/out")"
own_col() { awk -v c="$1" 'index($0, c) == 1 { r = substr($0, length(c) + 1); split(r, f, " +"); if (f[2] == 1) print f[4] }' "$T/out"; }
is "$on" "$(own_col "collprof, trace on")" "ablate.sh --parse: trace on's own ns"
is "$rh" "$(own_col "trace on, ring holds run")" "ablate.sh --parse: ring-holds-run's own ns"
is "$off" "$(own_col "collprof, trace off")" "ablate.sh --parse: trace off's own ns"
# test/bench/ablate.sh's measuring-only variants are textual patches: each
# must still apply to this tree (a stale one would silently measure nothing).
if command -v python3 >/dev/null; then
  "$TOP/test/bench/ablate.sh" --check >"$T/abl" 2>&1
  rc=$?
  sed 's/^/# /' "$T/abl"
  is "$rc" 0 "every ablate.sh variant's patch applies to this tree"
fi
done_testing
