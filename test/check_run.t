#!/bin/bash
# check_run.t — the GPU run's checker (test/gpu/check_run.py), on CPU: a
# made-up run (test/check_run_fake.py) that agrees with the app's counts
# must pass, and each defect must fail the check that names it (or be
# skipped where the checker's rules say so), so that the "ok" lines of a
# GPU run can be trusted.
. "$(dirname "$0")/tap.sh"
command -v python3 >/dev/null || skip_all "no python3"
CHK=$TOP/test/gpu/check_run.py
# run NAME DEFECT...: a fresh fake run with those defects, checked; the
# checker's output in $T/NAME.out, its exit status in rc
run() {
  local name=$1; shift
  rm -rf "$T/$name"
  python3 "$TOP/test/check_run_fake.py" "$T/$name" "$@" &&
    python3 "$CHK" "$T/$name/app" "$T/$name/prof" >"$T/$name.out" 2>&1
  rc=$?
}
nfail() { grep -c '^not ok' "$T/$1.out"; }
# has NAME REGEX TEST: a line of NAME's output matches REGEX
has() {
  if grep -Eq -- "$2" "$T/$1.out"; then _tap_report 0 "$3"
  else _tap_report 1 "$3"; grep -E '^not ok|SKIP' "$T/$1.out" | head -n 5 | sed 's/^/#   /'; fi
}

run good
is "$rc $(nfail good)" "0 0" "a run that agrees with the app: exit 0, no check fails"
has good '^# [0-9]+ checks, 0 failed' "it says how many checks ran"
LAUNCH_ALL=1 run lgood
is "$rc $(nfail lgood)" "0 0" "LAUNCH_ALL=1 (every launch wanted): the good run passes"
has lgood '^ok .* - rank 1: launches skipped 4 >= the app.s calls while capturing a graph 4' \
  "... and says each rank's captured calls were skipped"
LAUNCH_ALL=1 run ltimed capture-timed
is "$rc $(nfail ltimed)" "1 1" "LAUNCH_ALL=1: a captured launch not skipped fails one check"
has ltimed '^not ok .* - rank 1: launches skipped 3 >= the app.s calls while capturing a graph 4' \
  "... the one that names the rank"
run lsum summary-launches
has lsum '^not ok .* - summary.json: gpu_launches_timed 62 = sum of rank records. gpuLaunchesTimed 61' \
  "summary.json's timed launches must be the ranks' sum"

run coll coll-off-by-one
is "$rc $(nfail coll)" "1 1" "one Coll call too many on one rank: exit 1, one check fails"
has coll '^not ok .* - rank 1: Coll AllReduce calls 121 ' "the failing check names the rank, the path and the count"
run api api-off-by-one
has api '^not ok .* - rank 0: CollApi AllReduce calls 99 = app.s calls 100' "one CollApi call too few fails"
has api '^not ok .* - summary.json: CollApi AllReduce calls 203 = app.s calls 204' "... and so does the summary's total"
run nogpu no-gpu
has nogpu '^not ok .* - rank 0: Coll AllReduce has GPU time \(0 ns from 0 samples\)' "a Coll path without GPU time fails"

run drop drop-20
is "$rc" 1 "20% of samples dropped with 1 call in 16: exit 1"
has drop '^not ok .* - rank 0: GPU samples dropped 4 of 20 sampled calls \(20\.00%\) <= 10%' "the drop check fails on that rank"
run frozen frozen-kc-on
is "$rc $(nfail frozen)" "0 0" "the same drop after the mask froze with KernelCh on: no check fails"
has frozen '^ok .* - rank 0: GPU samples dropped 4 of 20 .* # SKIP mask frozen with KernelCh on' "the drop check says it skipped, and why"
has frozen '^ok .* - summary.json: mask_frozen "second calling thread: KernelCh on": ranks \[0\] = rank records' \
  "summary.json's mask_frozen lists that rank"
run koff frozen-kc-off
is "$rc $(nfail koff)" "0 0" "both ranks frozen with KernelCh off by a second thread before any sample: no check fails"
has koff '^ok .* - rank 0: Coll AllReduce has GPU time \(0 ns from 0 samples\) # SKIP mask frozen with KernelCh off' \
  "the GPU time checks say they skipped, and why"
has koff '^# rank 1: mask frozen \(NCCL calls from a second thread, KernelCh off\): graph replays give no event' \
  "... and that rank 1's graph replays give no event (KernelCh off at its capture)"
run every every-call
is "$rc" 0 "with gpuSample 1 a 20% drop is not held against the run"
has every '^ok .* # SKIP not 1 call in N >= 2' "the drop check says it skipped, and why"

run sdrop summary-dropped
has sdrop '^not ok .* - summary.json: gpu_samples_dropped 3 = sum of rank records' "summary.json's dropped samples must be the ranks' sum"
run scalls summary-calls
has scalls '^not ok .* - summary.json: Coll AllReduce calls 221 bytes [0-9]+ = sum over the rank files 220' \
  "summary.json's Coll calls must be the ranks' sum"
run fmiss frozen-kc-on frozen-missing
has fmiss '^not ok .* - summary.json: mask_frozen has each reason once and all .*\(missing: second calling thread' \
  "a reason missing from summary.json's mask_frozen fails"
run badline bad-line
has badline '^not ok .* - rank1\.jsonl: all 12 lines parse' "a line that is not JSON fails"

run cap capture-event
is "$rc $(nfail cap)" "0 0" "captured calls that give a Coll event at capture: accepted"
has cap '^ok .* - one rule for captured calls with the mask not frozen: captured calls give a Coll/P2p event at capture' \
  "the rule seen is reported"
run mixed capture-mixed
has mixed '^not ok .* - one rule for captured calls with the mask not frozen: captured calls give a Coll/P2p event at capture, captured calls give no Coll/P2p event' \
  "two ranks under the same mask state that disagree on captured calls fail"
run hidden hidden-replays
is "$rc $(nfail hidden)" "0 0" "replays that give no event after the mask froze at the capture with KernelCh off: accepted"
has hidden '^# rank 1: mask frozen \(graph capture: KernelCh off\): graph replays give no event, not counted' \
  "the checker says it left them out"
has hidden '^ok .* - rank 1: Coll AllReduce calls 100 bytes [0-9]+ = app.s eager calls 100' "rank 1 is held to its eager calls"
done_testing
