#!/bin/bash
# overhead_report.t — the report of test/gpu/overhead.sh, on CPU: sweeps
# made up with known latencies go through test/gpu/overhead_report.py and
# the goal lines must say what the numbers say (mean bus bandwidth ratio,
# the slowest size, which misses lie beyond the baseline's own spread, the
# largest excess per call), so a GPU run's verdicts can be trusted.
. "$(dirname "$0")/tap.sh"
command -v python3 >/dev/null || skip_all "no python3"
REP=$TOP/test/gpu/overhead_report.py
D=$T/ovh

# make CONFIG REP SCALE16 SCALE_ALL: one repetition's sweep.json; every
# size takes 10 us (x SCALE_ALL), 16 B x SCALE16 on top; busbw = bytes / time.
make() {
  mkdir -p "$D/$1.$2/app"
  python3 - "$D/$1.$2/app/sweep.json" "$3" "$4" <<'PY'
import json, sys
out, s16, sall = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
res = []
for b in (8, 16, 1024, 1048576):
    t = 10.0 * sall * (s16 if b == 16 else 1.0)
    res.append({"op": "allreduce", "bytes": b, "time_us": t, "busbw": b / t / 1e3})
json.dump({"results": res}, open(out, "w"))
PY
}
# none: 16 B spread 1% between repetitions; collprof: 16 B 10% slower.
make none 1 1.00 1; make none 2 1.01 1; make none 3 1.005 1
make collprof 1 1.10 1; make collprof 2 1.11 1; make collprof 3 1.10 1
make collprof-all 1 1 1.02; make collprof-all 2 1 1.02; make collprof-all 3 1 1.02
make noop-all 1 1 1.00; make noop-all 2 1 1.00; make noop-all 3 1 1.00
python3 "$REP" "$D" 2 none collprof collprof-all noop-all >"$D/a.out" 2>&1
g=$(grep '^goal: collprof defaults' "$D/a.out")
like "$g" "slowest size 16 B at \+9\.[0-9]*% \(goal <= 3%: MISSED\)" "the slowest size and its miss"
like "$(grep 'sizes over 3%' "$D/a.out")" "1 of 4, 1 of them beyond that size's noise \(16 B\); largest excess per call \+0\.9[0-9] us at 16 B" \
  "a miss beyond the baseline's spread is named, with its excess per call"
like "$(grep '^goal: collprof-all' "$D/a.out")" "-1\.9[0-9]% \(MISSED\)" "collprof-all 2% slower than noop-all: missed"
like "$(grep 'spread of repetitions' "$D/a.out")" "noop-all 0\.00%, collprof-all 0\.00%; the difference is beyond noop-all's spread" \
  "with steady noop-all runs the 2% gap is beyond their spread"

# The same miss inside a 30% spread of the baseline at 16 B.
rm -rf "$D"
make none 1 1.00 1; make none 2 1.30 1; make none 3 1.15 1
make collprof 1 1.21 1; make collprof 2 1.20 1; make collprof 3 1.20 1
make collprof-all 1 1 1.00; make collprof-all 2 1 1.00; make collprof-all 3 1 1.00
make noop-all 1 1 1.00; make noop-all 2 1 1.00; make noop-all 3 1 1.00
python3 "$REP" "$D" 2 none collprof collprof-all noop-all >"$D/b.out" 2>&1
like "$(grep '^goal: collprof defaults' "$D/b.out")" "16 B at \+4\.[0-9]*% \(goal <= 3%: MISSED\)" "a 4% miss at 16 B"
like "$(grep 'sizes over 3%' "$D/b.out")" "1 of 4, 0 of them beyond that size's noise \(none\)" \
  "inside the baseline's 30% spread it is not counted as beyond the noise"
like "$(grep '^goal: collprof-all' "$D/b.out")" "0\.00% \(met\)" "collprof-all equal to noop-all: met"

# KernelCh on every call: noop-all itself spreads 8% between runs; a 3% gap
# is a miss, but inside that spread.
rm -rf "$D"
make none 1 1 1.00; make none 2 1 1.00; make none 3 1 1.00
make collprof 1 1 1.00; make collprof 2 1 1.00; make collprof 3 1 1.00
make collprof-all 1 1 1.03; make collprof-all 2 1 1.04; make collprof-all 3 1 1.01
make noop-all 1 1 1.00; make noop-all 2 1 1.08; make noop-all 3 1 1.00
python3 "$REP" "$D" 2 none collprof collprof-all noop-all >"$D/c.out" 2>&1
like "$(grep '^goal: collprof-all' "$D/c.out")" "-2\.9[0-9]% \(MISSED\)" "collprof-all 3% below noop-all's median: missed"
like "$(grep 'spread of repetitions' "$D/c.out")" "noop-all 7\.[0-9]*%, collprof-all 2\.9[0-9]%; the difference is inside noop-all's spread" \
  "...and said to lie inside noop-all's own spread"
# Paired repetitions with the split configurations: 9 repetitions whose
# baseline wanders by up to 40% between them (so the spread says nothing),
# while in every repetition noop-default adds 0.2 us per call at the
# host-bound sizes, collprof-notrace 0.3 and collprof 0.5; 1 MiB the same
# in all.  The sign test must call 16 B real (9 of 9 slower, p = 0.004),
# and the attribution must recover 0.2 + 0.1 + 0.2.
# paired REPS ADD: REPS repetitions, each with its own baseline (10 .. 14
# us, 5% steps of (rep x 7) mod 9), every configuration of the JSON object
# ADD taking that plus its value (us) at the host-bound sizes; 1 MiB equal.
paired() {
  rm -rf "$D"
  python3 - "$D" "$1" "$2" <<'PY'
import json, os, sys
d, reps, add = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
for rep in range(1, reps + 1):
    base = 10.0 * (1 + 0.05 * ((rep * 7) % 9))
    for c, a in add.items():
        res = []
        for b in (8, 16, 1024, 1048576):
            t = base + (a if b <= 65536 else 0)
            res.append({"op": "allreduce", "bytes": b, "time_us": t, "busbw": b / t / 1e3})
        os.makedirs("%s/%s.%d/app" % (d, c, rep))
        json.dump({"results": res}, open("%s/%s.%d/app/sweep.json" % (d, c, rep), "w"))
PY
}
paired 9 '{"none": 0, "collprof": 0.5, "collprof-all": 0, "noop-all": 0, "noop-default": 0.2, "collprof-notrace": 0.3}'
python3 "$REP" "$D" 2 none collprof collprof-all noop-all noop-default collprof-notrace >"$D/d.out" 2>&1
like "$(grep -E '^ +16 ' "$D/d.out" | tail -1)" "^ +16 +9/9 p=0\.004 +0/0 p=1\.000 +0/0 p=1\.000 +9/9 p=0\.004 +9/9 p=0\.004" \
  "paired: 16 B slower in 9 of 9 repetitions for collprof, noop-default, collprof-notrace (p 0.004); ties left out"
like "$(grep -E '^ +1048576 ' "$D/d.out" | tail -1)" "^ +1048576 +0/0 p=1\.000" "paired: 1 MiB equal in every pair: no verdict"
like "$(grep '^median over sizes' "$D/d.out")" "collprof \+0\.500, collprof-all \+0\.000, noop-all \+0\.000, noop-default \+0\.200, collprof-notrace \+0\.300" \
  "the median paired excess per call at host-bound sizes, per configuration"
like "$(grep "^collprof's excess split" "$D/d.out")" "NCCL emitting the default events \+0\.200 \(noop-default - none\); collprof's bookkeeping \+0\.100 \(collprof-notrace - noop-default\); its trace \+0\.200 \(collprof - collprof-notrace\)" \
  "the excess split into NCCL's emission, collprof's bookkeeping and its trace"
like "$(grep 'sizes over 3%' "$D/d.out")" "0 of them beyond that size's noise" \
  "...which the spread-based verdict could not see (the baseline wanders 40%)"
# A repetition whose run failed (no sweep.json) must not shift the pairs:
# they are matched by repetition number.  By position, collprof's
# repetitions 6-9 would meet none's 5-8, whose times differ by up to 40%.
rm "$D/collprof.5/app/sweep.json"
python3 "$REP" "$D" 2 none collprof collprof-all noop-all noop-default collprof-notrace >"$D/e.out" 2>&1
like "$(grep -E '^ +16 ' "$D/e.out" | tail -1)" "^ +16 +8/8 p=0\.008 .* 9/9 p=0\.004 +9/9 p=0\.004" \
  "a missing repetition: collprof 8 of 8 pairs, the others still 9 of 9 (pairs by repetition number)"
like "$(grep "^collprof's excess split" "$D/e.out")" "its trace \+0\.200 \(collprof - collprof-notrace\)" \
  "...and the split still recovers the trace's 0.2 us"
# Every event on every call: noop-all adds 1.0 us per call at the
# host-bound sizes, collprof-all-notrace 1.4 and collprof-all 2.1; the
# split must recover collprof's 0.4 of bookkeeping and 0.7 of trace.
paired 7 '{"none": 0, "collprof": 0.5, "collprof-all": 2.1, "noop-all": 1.0, "collprof-all-notrace": 1.4}'
python3 "$REP" "$D" 2 none collprof collprof-all noop-all collprof-all-notrace >"$D/f.out" 2>&1
like "$(grep "^collprof-all's excess over noop-all split" "$D/f.out")" "collprof's bookkeeping \+0\.400 \(collprof-all-notrace - noop-all\); its trace \+0\.700 \(collprof-all - collprof-all-notrace\)" \
  "collprof-all's excess over noop-all split into bookkeeping and trace"
python3 "$REP" "$D" 2 none collprof collprof-all noop-all >"$D/g.out" 2>&1
is "$(grep -c "^collprof-all's excess over noop-all split" "$D/g.out")" 0 "without collprof-all-notrace: no such split"

# NCCL's two regimes with KernelCh on every call: 4 repetitions, 1 MiB
# takes 10 us (noop-all) or 10.5 us (collprof-all) in a fast run and 35-40
# us in a slow one; noop-all's rep 2 and collprof-all's reps 3 and 4 are
# slow.  The medians then say 22.5 vs 25.3 us; the best of repetitions must
# give collprof-all's own 5%, and the slow runs must be counted and named.
rm -rf "$D"
python3 - "$D" <<'PY'
import json, os, sys
d = sys.argv[1]
fast = {"none": 9.0, "noop-all": 10.0, "collprof-all": 10.5}
slow = {("noop-all", 2): 35.0, ("collprof-all", 3): 40.0, ("collprof-all", 4): 38.0}
for c in fast:
    for rep in range(1, 5):
        res = []
        for b in (8, 1048576, 8388608):
            t = slow.get((c, rep), fast[c]) if b == 1048576 else 5.0
            res.append({"op": "allreduce", "bytes": b, "time_us": t, "busbw": b / t / 1e3})
        os.makedirs("%s/%s.%d/app" % (d, c, rep))
        json.dump({"results": res}, open("%s/%s.%d/app/sweep.json" % (d, c, rep), "w"))
PY
python3 "$REP" "$D" 2 noop-all collprof-all none >"$D/h.out" 2>&1
like "$(sed -n '/best of repetitions/,/^mean busbw/p' "$D/h.out" | grep -E '^ +1048576 ')" "^ +1048576 +10\.00 +10\.50 +9\.00 +1\.050 +0\.900\$" \
  "best of repetitions at 1 MiB: collprof-all's own 5% over noop-all, though the medians differ by 12%"
like "$(grep '^mean busbw of the fastest runs' "$D/h.out")" "noop-all 594\.194 \(1\.0000\), collprof-all 592\.529 \(0\.9972\), none 598\.077 \(1\.0065\)" \
  "mean busbw over sizes of each configuration's fastest runs"
like "$(grep '^runs that turned slow' "$D/h.out")" "noop-all 1/4 \(reps 2\), collprof-all 2/4 \(reps 3 4\), none 0/4\$" \
  "slow runs counted per configuration, with their repetitions"
like "$(grep "Fisher's exact test" "$D/h.out")" "collprof-all p=1\.000, none p=1\.000\$" \
  "2 of 4 against 1 of 4 slow runs: no evidence (Fisher p = 1)"
is "$(python3 -c "import sys; sys.path.insert(0, '$TOP/test/gpu'); import overhead_report as o; print('%.4f %.4f' % (o.fisher_p(9, 10, 3, 10), o.fisher_p(3, 3, 0, 3)))")" \
  "0.0198 0.1000" "Fisher's exact test: 9 of 10 against 3 of 10 gives p = 0.0198, 3 of 3 against 0 of 3 p = 0.1 (as tabulated)"
done_testing
