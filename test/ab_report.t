#!/bin/bash
# ab_report.t — the report of test/gpu/ab.sh (test/gpu/ab_report.py), on
# CPU: an ab.json made up with known block times must come out with the
# ratios, sign counts, p values, bus bandwidth ratio and goal line its
# numbers imply, so that a GPU run's verdicts can be trusted; then
# test/gpu/ab_passes.py, which sets several passes side by side.
. "$(dirname "$0")/tap.sh"
command -v python3 >/dev/null || skip_all "no python3"
REP=$TOP/test/gpu/ab_report.py

# 8 rounds: at 8 B "on" is 5% slower in every round; at 1 KiB 2% slower in
# 6 rounds of 8 and 1% faster in 2; at 1 MiB equal to 0.01% (4 rounds each
# way).  busbw factor 1: mean bus bandwidth = mean of bytes / time.
mkdir -p "$T/ab"
python3 - "$T/ab/ab.json" <<'PY'
import json, sys
off = [10.0, 10.2, 9.9, 10.1, 10.0, 10.3, 9.8, 10.0]
res = [
    {"op": "allreduce", "bytes": 8, "busbw_factor": 1.0, "off_us": off, "on_us": [x * 1.05 for x in off]},
    {"op": "allreduce", "bytes": 1024, "busbw_factor": 1.0, "off_us": off,
     "on_us": [x * (1.02 if i < 6 else 0.99) for i, x in enumerate(off)]},
    {"op": "allreduce", "bytes": 1 << 20, "busbw_factor": 1.0, "off_us": off,
     "on_us": [x * (1.0001 if i % 2 else 0.9999) for i, x in enumerate(off)]},
]
json.dump({"nranks": 2, "calls": 100, "rounds": 8, "settle": 2, "results": res}, open(sys.argv[1], "w"))
PY
out=$(python3 "$REP" "$T/ab" test)
is "$?" 0 "ab_report.py runs"
like "$(grep -E '^ +8B ' <<<"$out")" '^ +8B +10\.(5[0-9]) +10\.00 +1\.0500 +8/8 +0\.008 ' \
  "8 B: median paired ratio 1.0500, slower in 8 of 8, sign test p = 0.008"
like "$(grep -E '^ +1K ' <<<"$out")" ' 1\.0200 +6/8 +0\.289 ' "1 KiB: median ratio 1.0200, 6 of 8, p = 0.289"
like "$(grep -E '^ +1M ' <<<"$out")" ' 1\.0000 +4/8 +1\.000 ' "1 MiB: ratio 1.0000, 4 of 8, p = 1"
like "$(grep -E '^ +8B ' <<<"$out")" ' 5\.1%$' "the paused blocks' spread: max/min - 1 = 10.3/9.8 - 1"
like "$(grep 'sizes more than 3%' <<<"$out")" '1 of 3 \(8B\); of those with p < 0.05: 1 \(8B\)' \
  "sizes over 3%: 8 B only, and significant"
like "$(grep 'goal check' <<<"$out")" 'mean busbw 1\.0000 of paused within 1%; 1 of 3 sizes > 3% slower \(1 with' \
  "goal line: mean bus bandwidth as nccl-tests averages it (the largest size dominates), then the sizes"
# Against a floor (the do-nothing plugin's run): "on" 1% slower than
# "off" at every size there, so 8 B is 1.05 / 1.01 over it, 1 MiB under it.
mkdir -p "$T/floor"
python3 - "$T/floor/ab.json" <<'PY'
import json, sys
off = [10.0, 10.2, 9.9, 10.1, 10.0, 10.3, 9.8, 10.0]
res = [{"op": "allreduce", "bytes": b, "busbw_factor": 1.0, "off_us": off, "on_us": [x * 1.01 for x in off]}
       for b in (8, 1024, 1 << 20)]
json.dump({"nranks": 2, "calls": 100, "rounds": 8, "settle": 2, "results": res}, open(sys.argv[1], "w"))
PY
out=$(python3 "$REP" "$T/ab" test --floor "$T/floor" noop)
like "$(grep -E '^ +8B ' <<<"$out")" '^ +8B +1\.0500 +1\.0100 +1\.0396$' "against the floor, 8 B: 1.0500 / 1.0100 = 1.0396"
like "$(grep -E '^ +1M ' <<<"$out")" '^ +1M +1\.0000 +1\.0100 +0\.9901$' "1 MiB: 1.0000 / 1.0100 = 0.9901"
like "$(grep 'goal check' <<<"$out")" '^# goal check, test vs noop: allreduce: mean busbw 1\.0100 of the floor.s within 1%; 1 sizes > 3% above the floor \(8B\)$' \
  "goal line against the floor: the bus bandwidth ratios' ratio, the sizes over 3%"
# gen_passes DIR SPEC: pass folders DIR/pN/CONFIG/app/ab.json made up, and
# DIR/configs; SPEC is JSON {"sizes": [bytes...], "configs": {name: [[the
# on/off ratio of each size] for each pass]}}, every round of a pass at
# that ratio over the same paused times.
gen_passes() {
  python3 - "$1" "$2" <<'PY'
import json, os, sys
top, spec = sys.argv[1], json.loads(sys.argv[2])
off = [10.0, 10.2, 9.9, 10.1]
for c, passes in spec["configs"].items():
    for p, ratios in enumerate(passes):
        d = os.path.join(top, "p%d" % (p + 1), c, "app")
        os.makedirs(d)
        res = [{"op": "allreduce", "bytes": b, "busbw_factor": 1.0, "off_us": off, "on_us": [x * k for x in off]}
               for b, k in zip(spec["sizes"], ratios)]
        json.dump({"nranks": 2, "calls": 100, "rounds": 4, "settle": 2, "results": res},
                  open(os.path.join(d, "ab.json"), "w"))
open(os.path.join(top, "configs"), "w").write("\n".join(spec["configs"]) + "\n")
PY
}
# Several alternated passes (ab.sh PASSES=n): ab_passes.py.  Three passes
# of a baseline "old" and a "new" configuration; per size the ratio is the
# same in every round of a pass, so each pass's per-size median is known.
# old: 8 B at 1.05, 1.04, 1.06 in the three passes, 1 MiB at 1.00;
# new: 8 B at 1.02, 1.045, 1.01, 1 MiB at 1.00.  Per pass the median over
# the two sizes: old 1.025, 1.02, 1.03; new 1.01, 1.0225, 1.005 (above
# old in the second pass).
gen_passes "$T/passes" '{"sizes": [8, 1048576], "configs": {"old": [[1.05, 1.0], [1.04, 1.0], [1.06, 1.0]],
  "new": [[1.02, 1.0], [1.045, 1.0], [1.01, 1.0]]}}'
out=$(python3 "$TOP/test/gpu/ab_passes.py" "$T/passes")
is "$?" 0 "ab_passes.py runs"
like "$(grep -E '^  old ' <<<"$out")" '^  old +1\.0250 1\.0200 1\.0300 +\| median 1\.0250$' \
  "the baseline (listed first in configs): its per-pass medians over sizes, their median"
like "$(grep -E '^  new ' <<<"$out")" '1\.0100 1\.0225 1\.0050 +\| median 1\.0100; below old in 2 of 3 passes \(sign test p = 1\.000\)$' \
  "the other: per pass, median, in how many passes it was below the baseline, the sign test's p"
like "$(grep -E '^  allred 8B ' <<<"$out" | head -1)" ' 1\.0500 +1\.0200$' "8 B: the median over the passes per configuration"
like "$(grep -E '^# \[0\] old:' <<<"$out" | head -1)" '1 of 2 sizes above 1\.03 by their median over the passes \(8B\)$' \
  "sizes above 3% by their median over the passes: the baseline's 8 B"
like "$(grep -E '^# \[1\] new:' <<<"$out" | head -1)" '0 of 2 sizes above 1\.03 by their median' "...and none of the new one's"
# Pooled: old's 8 B rounds are 4 x 1.04, 4 x 1.05, 4 x 1.06, so the median
# is 1.05 and its 95% interval (x3, x10 of 12) [1.04, 1.06], wholly above
# 1.03; new's are 4 x 1.01, 1.02, 1.045: median 1.02.
like "$(grep -E '^  allred 8B ' <<<"$out" | tail -1)" '^  allred 8B +1\.0500 \[1\.0400,1\.0600\] \( +12\) +1\.0200 \[1\.0100,1\.0450\] \( +12\)$' \
  "pooled rounds per size: median, 95% interval by order statistics, number of rounds"
like "$(grep -E '^# \[0\] old: .*pooled' <<<"$out")" '1 of 2 sizes above 1\.03 by the pooled median \(8B\); with the interval above 1\.03: 1 \(8B\)$' \
  "pooled verdict: 8 B above 3%, beyond the rounds' noise"
like "$(grep -E '^# \[1\] new: .*pooled' <<<"$out")" '0 of 2 sizes above 1\.03 by the pooled median; with the interval above 1\.03: 0$' \
  "...the new configuration's none"
# One configuration whose 8 B is 1.05, 1.00 and 1.04 in three passes: its
# pooled median 1.04 is above 1.03, its interval [1.00, 1.05] is not.
gen_passes "$T/passes2" '{"sizes": [8], "configs": {"mid": [[1.05], [1.00], [1.04]]}}'
out=$(python3 "$TOP/test/gpu/ab_passes.py" "$T/passes2")
like "$(grep -E '^# \[0\] mid: .*pooled' <<<"$out")" '1 of 1 sizes above 1\.03 by the pooled median \(8B\); with the interval above 1\.03: 0$' \
  "pooled median above 3% with an interval reaching below it: not counted as beyond the noise"
# The sign test over eight passes: "a" lower than the baseline in all 8
# (p = 2/256), "b" in 7 with one tie (7 of 7 differing: p = 2/128), "c"
# in 6 of 8 (p = 2 x 37/256 = 0.289).
gen_passes "$T/passes3" '{"sizes": [8], "configs": {"base": [[1.10], [1.10], [1.10], [1.10], [1.10], [1.10], [1.10], [1.10]],
  "a": [[1.05], [1.05], [1.05], [1.05], [1.05], [1.05], [1.05], [1.05]],
  "b": [[1.05], [1.05], [1.05], [1.05], [1.05], [1.05], [1.05], [1.10]],
  "c": [[1.05], [1.05], [1.05], [1.05], [1.05], [1.05], [1.15], [1.15]]}}'
out=$(python3 "$TOP/test/gpu/ab_passes.py" "$T/passes3")
like "$(grep -E '^  a ' <<<"$out")" 'below base in 8 of 8 passes \(sign test p = 0\.008\)$' "sign test: 8 of 8 lower"
like "$(grep -E '^  b ' <<<"$out")" 'below base in 7 of 8 passes \(sign test p = 0\.016\)$' "sign test: a tie is left out (7 of 7)"
like "$(grep -E '^  c ' <<<"$out")" 'below base in 6 of 8 passes \(sign test p = 0\.289\)$' "sign test: 6 of 8, not resolved"
# Against the floor over passes: collprof-all and noop-all in three
# passes.  noop-all: 1.01 at both sizes in pass 1, 1.00 after; collprof-all:
# 8 B at 1.05, 1.02, 1.04 and 1 MiB at 1.00, 1.03, 1.00.  Mean bus
# bandwidth (1 MiB dominates) over the floor's: 1.00 / (1 / 1.01) = 1.0100,
# (1 / 1.03) / 1 = 0.9709, 1.0000: median 1.0000, within 1% in 2 of 3.  Per
# size over the floor: 8 B 1.0396, 1.02, 1.04 (median 1.0396, above 3%);
# 1 MiB 0.9901, 1.03, 1.00 (median 1.0000).
gen_passes "$T/floors" '{"sizes": [8, 1048576], "configs": {"collprof-all": [[1.05, 1.00], [1.02, 1.03], [1.04, 1.00]],
  "noop-all": [[1.01, 1.01], [1.0, 1.0], [1.0, 1.0]]}}'
out=$(python3 "$TOP/test/gpu/ab_passes.py" "$T/floors")
is "$?" 0 "ab_passes.py with a configuration and its floor runs"
like "$(grep -E '^  busbw ' <<<"$out")" '^  busbw  1\.0100 0\.9709 1\.0000  \| median 1\.0000; within 1% in 2 of 3 passes$' \
  "over the floor, pass by pass: each pass's mean bus bandwidth ratio over the floor's, paired within the pass"
like "$(grep -E '^  allred 8B ' <<<"$out" | tail -1)" '^  allred 8B +1\.0396  \(3 passes\)$' "8 B over the floor: median over the passes of 1.05/1.01, 1.02, 1.04"
like "$(grep -E '^  allred 1M ' <<<"$out" | tail -1)" '^  allred 1M +1\.0000  \(3 passes\)$' "1 MiB over the floor: median of 0.9901, 1.03, 1.00"
like "$(grep 'goal check, collprof-all vs noop-all' <<<"$out")" 'allreduce, 3 passes: mean busbw 1\.0000 of the floor.s \(median over passes\) within 1%, within in 2 of 3 passes; 1 of 2 sizes > 3% above the floor by their median over the passes \(8B\)$' \
  "goal line over passes: median bus bandwidth ratio, passes within, sizes over 3%"
like "$(grep -c 'goal check, collprof vs' <<<"$out")" '^0$' "no line for a pair of which only one configuration ran"
python3 "$TOP/test/gpu/ab_passes.py" "$T/none" >"$T/none.out" 2>&1
like "$? $(cat "$T/none.out")" '^1 ab_passes.py: no pN/CONFIG/app/ab.json' "no passes: one clear line, exit 1"
python3 "$REP" "$T/none" >"$T/none.out" 2>&1
rc=$?
like "$rc $(cat "$T/none.out")" '^1 ab_report.py: no .*/ab.json' "no ab.json: one clear line, exit 1"
done_testing
