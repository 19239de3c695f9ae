#!/bin/bash
# launch_skew.t — test/gpu/launch_skew.py on two made-up rank traces: a
# busy timed launch counts as "peer behind" only when the peer's nearest
# timed launch started later and found its stream idle; sizes are
# nccl-tests sizes (an all-gather's Coll bytes x the communicator's ranks,
# from its ProfilerLifecycle record); first launches are left out.
. "$(dirname "$0")/tap.sh"
command -v python3 >/dev/null 2>&1 || skip_all "no python3"
S=$TOP/test/gpu/launch_skew.py
# rec RANKFILE TS GPU_US_TOTAL LAUNCHES IDLE [FIRST]
rec() {
  printf '{"recordType":"gpuLaunch","type":"ncclProfileColl","func":"AllGather","commId":"7","rank":0,"ts":%s,"bytes":524288,"ops":1,"launches":%s,"gpuDuration":%s,"first":%s,"split":false,"idle":%s}\n' \
    "$2" "$4" "$3" "${6:-false}" "$5" >>"$1"
}
for f in r0 r1; do
  echo '{"recordType":"event","type":"ProfilerLifecycle","func":"ProfilerInit","commId":"7","details":{"nranks":2}}' >"$T/$f"
done
rec "$T/r0" 100 50 1 true true      # first: left out
rec "$T/r1" 100 50 1 true true
rec "$T/r0" 1000 20 1 false         # busy; peer later and idle: behind
rec "$T/r1" 1030 17 1 true
rec "$T/r0" 2000 30 2 false         # busy (15 us each); peer later but busy: not behind
rec "$T/r1" 2010 28 2 false
rec "$T/r0" 3000 16 1 false         # busy; peer earlier and idle: not behind
rec "$T/r1" 2990 18 1 true
rec "$T/r0" 4000 18 1 true          # idle
rec "$T/r1" 4005 18 1 true
python3 "$S" "$T/r0" "$T/r1" >"$T/out" 2>&1
is "$?" 0 "launch_skew.py exits 0 (it judges nothing)"
sed 's/^/# /' "$T/out"
row=$(grep '^  allgather' "$T/out" | tr -s ' ')
is "$(echo "$row" | cut -d' ' -f3)" 1048576 "size: Coll bytes x 2 ranks (nccl-tests size)"
is "$(echo "$row" | cut -d' ' -f4,5)" "3 1" "3 busy and 1 idle timed launches, the first left out"
is "$(echo "$row" | cut -d' ' -f6,7)" "16.00 18.00" "median us per launch of each kind (a run: span over its launches)"
is "$(echo "$row" | cut -d' ' -f8)" "1/3" "peer behind: later and idle only"
python3 "$S" "$T/r0" "$T/r1" 2000000 >"$T/out2" 2>&1
is "$(grep -c '^  allgather' "$T/out2")" 0 "MIN_BYTES leaves smaller sizes out"
done_testing
