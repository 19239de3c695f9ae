#!/bin/bash
# cost_sample.t — collprof's callbacks timed where NCCL makes them
# (src/cost_sample.c), on CPU: captures replayed through libcollprof.so.
# Every callback timed (one window the length of the run): the rank
# record counts exactly the start, stop and state callbacks the replay
# made; off: nothing; windows at random times (a replay at the capture's
# own pace): some callbacks timed, the estimate scaled by the time
# covered; the offline and the MPI summary's overhead are the ranks'
# in-situ figures (cost_sample_check.py says each rule).
. "$(dirname "$0")/tap.sh"
need_replay_collate
CHK=(python3 "$TOP/test/cost_sample_check.py")

replay() { # OUT SAMPLE_MS WINDOW_US [REPLAY ARGS...]
  local out=$1 ms=$2 us=$3; shift 3
  rm -rf "$out"
  COLLPROF_COST_SAMPLE_MS=$ms COLLPROF_COST_WINDOW_US=$us COLLPROF_OUTPUT_DIR="$out" COLLPROF_QUIET=1 \
    "$REPLAY" --no-mpi --plugin "$PLUGIN" "$@" >"$out.log" 2>&1
}

for sc in ar_nvlink ar_net ar4_threads; do
  cap=$FIX/$sc/p0.jsonl
  [ -s "$cap" ] || { skip "$sc: no capture"; continue; }
  replay "$T/$sc.always" 1 1000 "$cap"
  is "$?" 0 "$sc, every callback timed: the replay exits 0"
  "${CHK[@]}" always "$T/$sc.always" "$T/$sc.always.log" >"$T/chk" 2>&1
  tap_from_checker "$T/chk"
  replay "$T/$sc.off" 0 1000 "$cap"
  "${CHK[@]}" off "$T/$sc.off" >"$T/chk" 2>&1
  tap_from_checker "$T/chk"
done

# the v4 interface (NCCL 2.27) has wrappers of its own
replay "$T/v4.always" 1 1000 --api v4 "$FIX/ar_nvlink/p0.jsonl"
is "$?" 0 "v4, every callback timed: the replay exits 0"
"${CHK[@]}" always "$T/v4.always" "$T/v4.always.log" >"$T/chk" 2>&1
tap_from_checker "$T/chk"

# windows of 0.3 ms about every 2 ms, on a replay at the capture's pace
replay "$T/win" 2 300 --timed "$FIX/ar_net/p0.jsonl"
is "$?" 0 "windows at random times: the replay exits 0"
"${CHK[@]}" windows "$T/win" "$T/win.log" >"$T/chk" 2>&1
tap_from_checker "$T/chk"

# windows about every 8 ms: 4 times as often (every 2 ms) until 1 s after
# the first that timed a callback, then the two parts scaled each by its
# own; on ar_net's callbacks spread evenly over 2.5 s (NCCL's captures hold
# a few calls, a long gap, then a burst: whether a window catches one of
# the few would decide when the dense phase ends)
python3 "$TOP/test/spread_capture.py" "$FIX/ar_net/p0.jsonl" "$T/spread.jsonl" 2.5
replay "$T/dense" 8 300 --timed "$T/spread.jsonl"
is "$?" 0 "a dense phase, then windows every 8 ms: the replay exits 0"
"${CHK[@]}" dense "$T/dense" "$T/dense.log" >"$T/chk" 2>&1
tap_from_checker "$T/chk"
# ...and ended by the events made: 1.2 million in a fraction of a second
# (the dense phase then shorter than the second its time rule would take;
# ThreadSanitizer's build makes about 100,000 a second, as slow as that rule)
if [ "${SAN:-}" = thread ]; then
  skip "dense phase ended by events: under ThreadSanitizer the replay is too slow to beat the time rule"
else
  replay "$T/dense-ev" 8 300 --synthetic reuse --count 300
  is "$?" 0 "a dense phase ended by 100,000 events: the replay exits 0"
  "${CHK[@]}" dense-events "$T/dense-ev" "$T/dense-ev.log" >"$T/chk" 2>&1
  tap_from_checker "$T/chk"
fi

"$COLLATE" "$T/win" >/dev/null 2>&1
ok "summary.log of the windows run: the overhead with its standard error, from the windows' spread" \
  grep -Eq 'Estimated overhead \[s\]: +[0-9.]+ \+- 0\.[0-9]*[1-9][0-9]* \(collprof.s callbacks timed where NCCL made them: [0-9]+ in [0-9]+ windows' "$T/win/summary.log"

# the offline summary of an every-callback run
"$COLLATE" "$T/ar_nvlink.always" >/dev/null 2>&1
"${CHK[@]}" summary "$T/ar_nvlink.always" >"$T/chk" 2>&1
tap_from_checker "$T/chk"
"$COLLATE" "$T/ar_nvlink.off" >/dev/null 2>&1
"${CHK[@]}" fallback "$T/ar_nvlink.off" >"$T/chk" 2>&1
tap_from_checker "$T/chk"

# the MPI tree: 2 ranks, every callback timed
MPILIB=$LIB/libcollprof-mpi.so
mpi_replay() { # OUT PROGRAM: 2 ranks of ar_nvlink, every callback timed where not turned off
  rm -rf "$1"
  COLLPROF_OUTPUT_DIR=$1 COLLPROF_QUIET=1 COLLPROF_COST_SAMPLE_MS=1 COLLPROF_COST_WINDOW_US=1000 timeout 120 \
    "${MPIRUN[@]}" -np 2 -x COLLPROF_OUTPUT_DIR -x COLLPROF_QUIET -x COLLPROF_COST_SAMPLE_MS -x COLLPROF_COST_WINDOW_US \
    -x LD_PRELOAD="$MPILIB" "$2" "$FIX"/ar_nvlink/p*.jsonl >"$1.out" 2>&1
}
if mpi_preload_ok "$MPILIB"; then
  mpi_replay "$T/mpi" "$REPLAY"
  is "$?" 0 "mpirun, 2 ranks, every callback timed: exits 0"
  "${CHK[@]}" summary "$T/mpi" >"$T/chk" 2>&1
  tap_from_checker "$T/chk"
  # rank 1's windows off: its figure borrows rank 0's cost per event
  # (collate/merge.c), in the MPI tree and offline alike
  printf '#!/bin/sh\n[ "$OMPI_COMM_WORLD_RANK" = 1 ] && export COLLPROF_COST_SAMPLE_MS=0\nexec "%s" "$@"\n' \
    "$REPLAY" >"$T/rank1_off.sh"
  chmod +x "$T/rank1_off.sh"
  mpi_replay "$T/mix" "$T/rank1_off.sh"
  is "$?" 0 "mpirun, 2 ranks, rank 1's windows off: exits 0"
  "${CHK[@]}" borrowed "$T/mix" >"$T/chk" 2>&1
  tap_from_checker "$T/chk"
  rm -f "$T/mix/summary.json" "$T/mix/summary.log"
  "$COLLATE" "$T/mix" >/dev/null 2>&1
  "${CHK[@]}" borrowed "$T/mix" >"$T/chk" 2>&1
  tap_from_checker "$T/chk"
fi
done_testing
