#!/bin/bash
# ab.sh — what collprof costs NCCL, measured inside one run: the app's "ab"
# phase (test/gpu/app_ab.cu) times every size in ROUNDS rounds of a block
# with collprof recording and a block with it paused (collprof_pause),
# alternated, in the same processes; ab_report.py gives per size the
# median paired ratio, how many rounds were slower (sign test) and the
# paused blocks' own spread, then the mean bus bandwidth ratio.  Where
# test/gpu/overhead.sh compares separate runs, whose differences (GPU
# clocks, thread placement, NCCL's set-up) are often larger than the
# profiler's cost, this compares like with like.  On a GPU host, after
# `. .gpu-kit/env.sh`:
#
#   test/gpu/ab.sh [NP [ROUNDS]]          default: 2 ranks, 8 rounds
#
# CONFIGS (default "collprof collprof-all"): collprof's defaults, and every
# event type on every call (NCCL_PROFILE_EVENT_MASK=4095
# COLLPROF_GPU_SAMPLE=1); "collprof-gs0" (COLLPROF_GPU_SAMPLE=0: paused
# means NCCL sends nothing at all) shows what the one GroupApi per call
# that a pause keeps costs; "collprof-spaced" (COLLPROF_GPU_SAMPLE_US=500)
# spaces GPU samples in time (src/gpu_sample_rule.c, "Spacing"); "collprof-small1"
# (COLLPROF_GPU_SAMPLE_SMALL=1) samples small calls one in N like the rest;
# where the rest goes: "collprof-count" (GPU sampling off, every call only
# counted: COLLPROF_HOST_SAMPLE=0) and "collprof-api" (GPU sampling off,
# NCCL asked for GroupApi, CollApi and P2pApi alone: mask 1792);
# "collprof-mMASK": GPU sampling off, NCCL_PROFILE_EVENT_MASK=MASK;
# "collprof:VAR=V,VAR=V": collprof with those variables set.
# The floor, measured the same way: "noop-default", "noop-all", "noop-api"
# and "noop-mMASK" run the do-nothing plugin (test/noop, preloaded, whose
# collprof_pause sets the mask to GroupApi alone, as collprof's does) with
# mask 4031 (collprof's default mask), 4095, 1792 or MASK; the MPI layer
# is not loaded then, and no summary is written.  "noop-sampled" is
# noop-default with KernelCh sampled at collprof's default rates
# (NOOP_GPU_SAMPLE=16: one call in 16, one in 256 below 1 MiB;
# test/noop/noop_plugin.c): NCCL's own cost of what collprof's defaults
# ask it for, so collprof against it is what collprof's own work costs.  Where a collprof
# configuration and its floor both ran (collprof-all and noop-all,
# collprof or collprof-gs0 and noop-default, collprof-api and noop-api),
# ab_report.py --floor compares their ratios.  ITERS (default 100) calls per block, OPS
# (default allreduce), MAX (default 64M).  Outputs stay in $RUN_OUT.
# PASSES=n (default 1) runs all the configurations n times, in reversed
# order every other pass, into $RUN_OUT/pN/, and ends with ab_passes.py:
# each configuration's per-pass median ratio and in how many passes it was
# below the first one's, and per size the median over the passes (one
# pass's verdict moves by more than the differences in question); then
# each collprof configuration over its floor (the pairs below), pass by
# pass: the goal line for every event on every call over all passes.
# "collprof@DIR" (or "collprof@DIR:VAR=V,...") runs the libraries of the
# build in DIR (DIR/lib), e.g. an older commit's, as the baseline.
# "wrap-CONFIG" runs CONFIG's plugin inside the wrapper of timed_plugin.c
# as a plain forwarder (TIMED_NOTIME=1), "timed-CONFIG" inside it timing
# every callback (its per-thread lines end app.log); a CONFIG ending in
# "-nokc" keeps KernelCh from the plugin (TIMED_SKIP_KC=1).  So
# "wrap-collprof-all wrap-collprof-all-nokc wrap-noop-all" splits collprof's
# cost with every event between NCCL's proxy thread (KernelCh) and the rest.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
B=${COLLPROF_BUILD:-$TOP/build}
NP=${1:-2}
ROUNDS=${2:-8}
ITERS=${ITERS:-100}
MAX=${MAX:-64M}
OPS=${OPS:-allreduce}
APP=$B/bin/collprof-gpu-app
PLUGIN=$B/lib/libcollprof.so
MPILIB=$B/lib/libcollprof-mpi.so
NOOP=$B/lib/libnccl-profiler-noop.so
TIMED=$B/lib/libnccl-profiler-timed.so
RUN_OUT=${RUN_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/collprof-ab.XXXXXX")}
MPIRUN=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe}
MPIRUN="$MPIRUN ${MPI_BIND---bind-to none}"   # as overhead.sh: NCCL's proxy thread on a core of its own
export NCCL_NVLS_ENABLE=0
for f in "$APP" "$PLUGIN" "$MPILIB" "$NOOP"; do
  [ -n "${AB_PRINT_ENV:-}" ] && break
  [ -e "$f" ] || { echo "ab.sh: missing $f"; exit 1; }
done
config_env() {
  local m
  if [[ $1 == wrap-* || $1 == timed-* ]]; then   # inside timed_plugin.c's wrapper
    local inner=${1#*-} extra="" e
    [[ $1 == wrap-* ]] && extra="-x TIMED_NOTIME=1 "
    [[ $inner == *-nokc ]] && { inner=${inner%-nokc}; extra+="-x TIMED_SKIP_KC=1 "; }
    [ -e "$TIMED" ] || { echo "ab.sh: missing $TIMED (make gpu)" >&2; return 2; }
    e=$(config_env "$inner") || return 2
    echo "$(sed "s|NCCL_PROFILER_PLUGIN=\([^ ]*\)|NCCL_PROFILER_PLUGIN=$TIMED -x TIMED_INNER=\1|" <<<"$e") $extra"
    return
  fi
  case $1 in
    noop-sampled)
      echo "-x LD_PRELOAD=$NOOP -x NCCL_PROFILER_PLUGIN=$NOOP -x NCCL_PROFILE_EVENT_MASK=4031 -x NOOP_GPU_SAMPLE=16"
      return ;;
    noop-default) m=4031 ;;
    noop-all) m=4095 ;;
    noop-api) m=1792 ;;
    noop-m[0-9]*) m=${1#noop-m} ;;
  esac
  if [ -n "${m:-}" ]; then
    echo "-x LD_PRELOAD=$NOOP -x NCCL_PROFILER_PLUGIN=$NOOP -x NCCL_PROFILE_EVENT_MASK=$m"
    return
  fi
  local cfg=$1 mpilib=$MPILIB plugin=$PLUGIN
  if [[ $cfg == collprof@* ]]; then   # collprof@BUILD_DIR[:VAR=V,...]: another build's libraries
    local rest=${cfg#collprof@}
    local dir=${rest%%:*}
    mpilib=$dir/lib/libcollprof-mpi.so plugin=$dir/lib/libcollprof.so
    [ -e "$mpilib" ] && [ -e "$plugin" ] || { echo "ab.sh: no collprof libraries in $dir/lib" >&2; return 2; }
    cfg=collprof; [[ $rest == *:* ]] && cfg=collprof:${rest#*:}
  fi
  echo -n "-x LD_PRELOAD=$mpilib -x NCCL_PROFILER_PLUGIN=$plugin "
  set -- "$cfg"
  case $1 in
    collprof) echo "" ;;
    collprof-all) echo "-x NCCL_PROFILE_EVENT_MASK=4095 -x COLLPROF_GPU_SAMPLE=1" ;;
    collprof-gs0) echo "-x COLLPROF_GPU_SAMPLE=0" ;;
    collprof-spaced) echo "-x COLLPROF_GPU_SAMPLE_US=500" ;;
    collprof-notrace) echo "-x COLLPROF_TRACE=0" ;;
    collprof-small1) echo "-x COLLPROF_GPU_SAMPLE_SMALL=1" ;;
    collprof-count) echo "-x COLLPROF_GPU_SAMPLE=0 -x COLLPROF_HOST_SAMPLE=0" ;;
    collprof-api) echo "-x COLLPROF_GPU_SAMPLE=0 -x NCCL_PROFILE_EVENT_MASK=1792" ;;
    collprof-m[0-9]*) echo "-x COLLPROF_GPU_SAMPLE=0 -x NCCL_PROFILE_EVENT_MASK=${1#collprof-m}" ;;
    collprof:*) local v out=""
      IFS=, read -r -a vs <<<"${1#collprof:}"
      for v in "${vs[@]}"; do out+="-x $v "; done
      echo "$out" ;;
    *) echo "ab.sh: unknown configuration $1" >&2; return 2 ;;
  esac
}
# AB_PRINT_ENV=1: print each configuration's mpirun arguments and stop
# (test/timed_wrapper.t checks them on a machine without GPUs)
if [ -n "${AB_PRINT_ENV:-}" ]; then
  read -r -a CONFIG_LIST <<<"${CONFIGS:-collprof collprof-all}"
  for c in "${CONFIG_LIST[@]}"; do e=$(config_env "$c") || exit 2; echo "$c: $e"; done
  exit 0
fi
rc=0
PASSES=${PASSES:-1}
read -r -a CONFIG_LIST <<<"${CONFIGS:-collprof collprof-all}"
TOP_OUT=$RUN_OUT
# a configuration's folder: its name with / (collprof@DIR) made _
cdir() { tr '/' '_' <<<"$1"; }
for ((pass = 1; pass <= PASSES; pass++)); do
list=("${CONFIG_LIST[@]}")
if [ "$PASSES" -gt 1 ]; then
  RUN_OUT=$TOP_OUT/p$pass
  if [ $((pass % 2)) = 0 ]; then
    list=(); for ((i = ${#CONFIG_LIST[@]} - 1; i >= 0; i--)); do list+=("${CONFIG_LIST[i]}"); done
  fi
  echo "# pass $pass of $PASSES: ${list[*]}"
fi
for c in "${list[@]}"; do
  envs=$(config_env "$c") || exit 2
  d=$RUN_OUT/$(cdir "$c")
  mkdir -p "$d/app"
  # shellcheck disable=SC2086
  $MPIRUN -np "$NP" -x NCCL_NVLS_ENABLE=0 $envs \
    -x COLLPROF_OUTPUT_DIR="$d/prof" -x COLLPROF_QUIET=1 "$APP" --phases ab --ops "$OPS" --max "$MAX" \
    --iters "$ITERS" --warmup 20 --ab-rounds "$ROUNDS" --out "$d/app" >"$d/app.log" 2>&1 ||
    { echo "ab.sh: $c exited $?"; tail -n 5 "$d/app.log"; rc=1; continue; }
  python3 "$TOP/test/gpu/ab_report.py" "$d/app" "$c, $NP ranks" || rc=1
  # the summary must show the windows the pauses left
  [[ $c == *noop-* ]] || grep -m1 'Profiled windows' "$d/prof/summary.log" | cut -c1-160
done
done
if [ "$PASSES" -gt 1 ]; then
  for c in "${CONFIG_LIST[@]}"; do cdir "$c"; done > "$TOP_OUT/configs"
  python3 "$TOP/test/gpu/ab_passes.py" "$TOP_OUT" || rc=1
  exit $rc
fi
# Each collprof configuration against the do-nothing plugin with its mask,
# where both ran: collprof-all / noop-all is the issue's "every event on
# every call within 1% of the do-nothing plugin", measured in one process.
for pair in collprof-all:noop-all collprof:noop-default collprof:noop-sampled collprof-gs0:noop-default collprof-api:noop-api; do
  a=${pair%%:*} f=${pair#*:}
  [ -s "$RUN_OUT/$a/app/ab.json" ] && [ -s "$RUN_OUT/$f/app/ab.json" ] || continue
  python3 "$TOP/test/gpu/ab_report.py" "$RUN_OUT/$a/app" "$a, $NP ranks" --floor "$RUN_OUT/$f/app" "$f" || rc=1
done
exit $rc
