#!/bin/bash
# overhead.sh — what profiling costs NCCL, measured side by side in one run
# on a GPU host (after `. .gpu-kit/env.sh`).
#
#   test/gpu/overhead.sh [NP [REPS]]        default: 2 ranks, 3 repetitions
#
# Four configurations, alternated REPS times (so drift hits each alike),
# in reverse order on every second repetition: in a fixed order each
# configuration always follows the same one, so whatever the previous run
# leaves behind (GPU clocks, a host still settling) lands on one of them
# only, and the fixed order made the defaults' excess over none swing by
# more than the effect measured:
#   none          NCCL_PROFILER_PLUGIN=none
#   collprof      collprof defaults (MPI library preloaded)
#   collprof-all  collprof, NCCL_PROFILE_EVENT_MASK=4095 COLLPROF_GPU_SAMPLE=1
#   noop-all      the do-nothing plugin, NCCL_PROFILE_EVENT_MASK=4095
# Each run: collprof-gpu-app --phases sweep (OPS, default allreduce, 8 B to
# 64 MiB, x2, ITERS=200 timed calls per size).  overhead_report.py prints
# mean bus bandwidth and latency per size, medians over repetitions, ratios
# to "none", and the noise floor (spread among the "none" repetitions);
# gpu_time.py compares collprof's sampled GPU time with the app's CUDA-event
# time.  Outputs stay in $RUN_OUT.  Below about 1 MiB whole runs are
# faster or slower with no plugin at all (run_spread.sh measures how far
# on a host): there the in-process pairs of ab.sh are the comparison.
# WARMUP (default 20) untimed calls precede each size.
# ITER_TIMES=1 passes --iter-times to every run (a CUDA event after each
# timed call, host clocks per size in sweep.json): overhead_report.py then
# shows, for each configuration's 3 slowest sizes against "none", whether
# the excess is one slow call or spread over all, and when the size ran.
# All configurations then carry the same extra events, so ratios stay fair.
# EXTRA="noop-default collprof-notrace" adds configurations that split a
# difference between "collprof" and "none" (the report then says how much
# of it each part explains):
#   noop-default      the do-nothing plugin with collprof's default mask
#                     (4031: every type but KernelCh): NCCL's own cost of
#                     emitting the events collprof takes by default
#   collprof-notrace  collprof defaults with COLLPROF_TRACE=0
#   collprof-nice0    collprof defaults with the trace writer at the
#                     application's priority (COLLPROF_TRACE_NICE=0;
#                     default 10): with MPI_BIND="--bind-to core" the
#                     application, NCCL's proxy thread and the writer share
#                     one core
#   collprof-all-notrace  collprof-all with COLLPROF_TRACE=0: with it the
#                     report splits collprof-all's excess over noop-all
#                     into collprof's bookkeeping and its trace
#   noop-clock-all    noop-all reading the clock at every start and stop
#                     (NOOP_CLOCK=1): what timing every event costs by
#                     itself, the floor of any profiler that times them
#   collprof-hs16     collprof defaults with COLLPROF_HOST_SAMPLE=16: one API
#                     call in 16 timed and traced, the others only counted
#                     (src/call_modes.h, "Host sampling")
#   collprof-hs1      collprof defaults with every API call timed and traced
#                     (COLLPROF_HOST_SAMPLE=1)
#   collprof-spaced   collprof defaults with COLLPROF_GPU_SAMPLE_US=500: GPU
#                     samples spaced in time (src/gpu_sample_rule.c, "Spacing")
#   collprof-small1   collprof defaults with COLLPROF_GPU_SAMPLE_SMALL=1: calls
#                     under 64 KiB GPU-sampled one in N like the rest, not
#                     one in 4 N (src/gpu_sample_rule.c, "Small calls")
#   collprof-auto     collprof defaults with COLLPROF_HOST_SAMPLE=auto: N from
#                     each thread's call rate (src/host_sample.h)
#   collprof-nolaunch collprof defaults with COLLPROF_LAUNCH_SAMPLE=0: no
#                     CUDA events around kernel launches (src/launch_timer.h),
#                     so the report shows what timing launches costs
#   collprof-lt-count collprof defaults with COLLPROF_LAUNCH_INTERVAL_US=0:
#                     one launch in 64 timed however fast calls come (the
#                     default before the least interval between them)
#   collprof-run8     collprof defaults timing launches in runs of 8
#                     (COLLPROF_LAUNCH_RUN=8): one event pair per 8 launches
#   collprof-lt-first collprof defaults timing only each thread's first
#                     launch: what the timer costs beyond its timed launches
#   timed-collprof    collprof defaults inside the timing wrapper
#   timed-noop-all, timed-collprof-all, timed-collprof-all-notrace
#                     noop-all, collprof-all and collprof-all-notrace inside
#                     the timing wrapper (timed_plugin.c): app.log then
#                     holds each thread's mean cost per callback
#   collprof-all-nolaunch  collprof-all without timed kernel launches
#                     (COLLPROF_LAUNCH_SAMPLE=0)
#   collprof-all-defer, collprof-all-nodefer
#                     collprof-all with COLLPROF_PROXY_DEFER=1 / =0: NCCL's
#                     proxy-thread callbacks recorded and applied off that
#                     thread, or handled on it (src/proxy_defer.h)
#   timed-collprof-all-defer  collprof-all-defer inside the timing wrapper
#   timed-spinN-all   noop-all inside the wrapper with TIMED_SPIN_NS=N: a
#                     do-nothing plugin whose KernelCh callbacks on NCCL's
#                     proxy thread take N ns longer (does NCCL wait on them?)
#   lines-I-D-default, lines-I-D-all
#                     the do-nothing plugin (mask 4031 or 4095) inside the
#                     wrapper with TIMED_ILINES=I TIMED_DLINES=D: every
#                     callback also touches I lines of code and D lines of
#                     data; against lines-0-0-* it prices a cache line on
#                     this host, per callback (app.log) and per call (the
#                     latency per size)
#   collprof-other    collprof defaults from another build, the one in
#                     $COLLPROF_OTHER_BUILD (lib/): two builds side by side
#                     in one run, as no two runs on a shared host compare
# CONFIGS="none collprof ..." replaces the four standard configurations
# (then EXTRA adds to them); MAX (default 64M) is the sweep's largest size.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
B=${COLLPROF_BUILD:-$TOP/build}
NP=${1:-2}
REPS=${2:-3}
ITERS=${ITERS:-200}
MAX=${MAX:-64M}
WARMUP=${WARMUP:-20}
OPS=${OPS:-allreduce}
ITER_ARGS=()
[ "${ITER_TIMES:-0}" = 1 ] && ITER_ARGS=(--iter-times)
APP=$B/bin/collprof-gpu-app
PLUGIN=$B/lib/libcollprof.so
MPILIB=$B/lib/libcollprof-mpi.so
NOOP=$B/lib/libnccl-profiler-noop.so
TIMED=$B/lib/libnccl-profiler-timed.so
RUN_OUT=${RUN_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/collprof-overhead.XXXXXX")}
MPIRUN=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe}
# Each rank gets more than one core: NCCL's proxy thread (and collprof's
# trace writer) must not share one with the application, as Open MPI's
# default --bind-to core for <= 2 ranks would make them (src/affinity.c).
MPI_BIND=${MPI_BIND---bind-to none}
MPIRUN="$MPIRUN $MPI_BIND"
export NCCL_NVLS_ENABLE=0
for f in "$APP" "$PLUGIN" "$MPILIB" "$NOOP"; do
  [ -e "$f" ] || { echo "overhead.sh: missing $f"; exit 1; }
done

config_env() {
  case $1 in
    none) echo "-x NCCL_PROFILER_PLUGIN=none" ;;
    collprof) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$PLUGIN" ;;
    collprof-all) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$PLUGIN -x NCCL_PROFILE_EVENT_MASK=4095 -x COLLPROF_GPU_SAMPLE=1" ;;
    noop-all) echo "-x NCCL_PROFILER_PLUGIN=$NOOP -x NCCL_PROFILE_EVENT_MASK=4095" ;;
    noop-clock-all) echo "-x NCCL_PROFILER_PLUGIN=$NOOP -x NCCL_PROFILE_EVENT_MASK=4095 -x NOOP_CLOCK=1" ;;
    noop-default) echo "-x NCCL_PROFILER_PLUGIN=$NOOP -x NCCL_PROFILE_EVENT_MASK=4031" ;;
    collprof-hs16) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$PLUGIN -x COLLPROF_HOST_SAMPLE=16" ;;
    collprof-hs1) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$PLUGIN -x COLLPROF_HOST_SAMPLE=1" ;;
    collprof-spaced) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$PLUGIN -x COLLPROF_GPU_SAMPLE_US=500" ;;
    collprof-small1) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$PLUGIN -x COLLPROF_GPU_SAMPLE_SMALL=1" ;;
    collprof-auto) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$PLUGIN -x COLLPROF_HOST_SAMPLE=auto" ;;
    collprof-nolaunch) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$PLUGIN -x COLLPROF_LAUNCH_SAMPLE=0" ;;
    collprof-lt-first) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$PLUGIN -x COLLPROF_LAUNCH_SAMPLE=1000000000" ;;
    collprof-lt-count) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$PLUGIN -x COLLPROF_LAUNCH_INTERVAL_US=0" ;;
    collprof-run8) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$PLUGIN -x COLLPROF_LAUNCH_RUN=8" ;;
    collprof-notrace) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$PLUGIN -x COLLPROF_TRACE=0" ;;
    collprof-nice0) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$PLUGIN -x COLLPROF_TRACE_NICE=0" ;;
    collprof-all-nolaunch) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$PLUGIN -x NCCL_PROFILE_EVENT_MASK=4095 -x COLLPROF_GPU_SAMPLE=1 -x COLLPROF_LAUNCH_SAMPLE=0" ;;
    collprof-all-notrace) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$PLUGIN -x NCCL_PROFILE_EVENT_MASK=4095 -x COLLPROF_GPU_SAMPLE=1 -x COLLPROF_TRACE=0" ;;
    collprof-all-defer) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$PLUGIN -x NCCL_PROFILE_EVENT_MASK=4095 -x COLLPROF_GPU_SAMPLE=1 -x COLLPROF_PROXY_DEFER=1" ;;
    collprof-all-nodefer) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$PLUGIN -x NCCL_PROFILE_EVENT_MASK=4095 -x COLLPROF_GPU_SAMPLE=1 -x COLLPROF_PROXY_DEFER=0" ;;
    timed-collprof-all-defer) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$TIMED -x TIMED_INNER=$PLUGIN -x NCCL_PROFILE_EVENT_MASK=4095 -x COLLPROF_GPU_SAMPLE=1 -x COLLPROF_PROXY_DEFER=1" ;;
    timed-collprof) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$TIMED -x TIMED_INNER=$PLUGIN" ;;
    timed-noop-all) echo "-x NCCL_PROFILER_PLUGIN=$TIMED -x TIMED_INNER=$NOOP -x NCCL_PROFILE_EVENT_MASK=4095" ;;
    timed-collprof-all) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$TIMED -x TIMED_INNER=$PLUGIN -x NCCL_PROFILE_EVENT_MASK=4095 -x COLLPROF_GPU_SAMPLE=1" ;;
    timed-collprof-all-notrace) echo "-x LD_PRELOAD=$MPILIB -x NCCL_PROFILER_PLUGIN=$TIMED -x TIMED_INNER=$PLUGIN -x NCCL_PROFILE_EVENT_MASK=4095 -x COLLPROF_GPU_SAMPLE=1 -x COLLPROF_TRACE=0" ;;
    timed-spin*-all)
      local n=${1#timed-spin}
      n=${n%-all}
      echo "-x NCCL_PROFILER_PLUGIN=$TIMED -x TIMED_INNER=$NOOP -x TIMED_SPIN_NS=$n -x NCCL_PROFILE_EVENT_MASK=4095" ;;
    lines-*-*-default|lines-*-*-all)
      local a=${1#lines-} m=4031
      case $a in *-all) m=4095 ;; esac
      a=${a%-*}
      [[ $a =~ ^[0-9]+-[0-9]+$ ]] || { echo "overhead.sh: lines-I-D-default|all, I and D numbers: $1" >&2; exit 2; }
      echo "-x NCCL_PROFILER_PLUGIN=$TIMED -x TIMED_INNER=$NOOP -x TIMED_ILINES=${a%-*} -x TIMED_DLINES=${a#*-} -x NCCL_PROFILE_EVENT_MASK=$m" ;;
    collprof-other)
      local o=${COLLPROF_OTHER_BUILD:-}
      [ -n "$o" ] && [ -e "$o/lib/libcollprof.so" ] && [ -e "$o/lib/libcollprof-mpi.so" ] ||
        { echo "overhead.sh: collprof-other needs COLLPROF_OTHER_BUILD with lib/libcollprof{,-mpi}.so" >&2; exit 2; }
      echo "-x LD_PRELOAD=$o/lib/libcollprof-mpi.so -x NCCL_PROFILER_PLUGIN=$o/lib/libcollprof.so" ;;
    *) echo "overhead.sh: unknown configuration $1" >&2; exit 2 ;;
  esac
}

read -r -a configs <<<"${CONFIGS:-none collprof collprof-all noop-all}"
for c in ${EXTRA:-}; do
  config_env "$c" >/dev/null || exit 2
  configs+=("$c")
done
for rep in $(seq 1 "$REPS"); do
  order=("${configs[@]}")
  if [ $((rep % 2)) = 0 ]; then
    order=()
    for ((k = ${#configs[@]} - 1; k >= 0; k--)); do order+=("${configs[$k]}"); done
  fi
  for c in "${order[@]}"; do
    d=$RUN_OUT/$c.$rep
    mkdir -p "$d/app"
    # shellcheck disable=SC2046
    $MPIRUN -np "$NP" -x NCCL_NVLS_ENABLE=0 $(config_env "$c") -x COLLPROF_OUTPUT_DIR="$d/prof" \
      -x COLLPROF_QUIET=1 "$APP" --phases sweep --ops "$OPS" --max "$MAX" --iters "$ITERS" --warmup "$WARMUP" \
      ${ITER_ARGS[@]+"${ITER_ARGS[@]}"} --out "$d/app" >"$d/app.log" 2>&1 || echo "overhead.sh: $c.$rep exited $?"
    echo "# $c rep $rep: $(grep 'avg bus bandwidth' "$d/app.log" | tr '\n' ' ')"
  done
done
python3 "$TOP/test/gpu/overhead_report.py" "$RUN_OUT" "$NP" "${configs[@]}"
rc=$?
for c in collprof collprof-all; do
  [ -e "$RUN_OUT/$c.1/app/sweep.json" ] || continue
  echo "== sampled GPU time vs CUDA events: $c.1"
  python3 "$TOP/test/gpu/gpu_time.py" "$RUN_OUT/$c.1/app/sweep.json" "$RUN_OUT/$c.1/prof/rank0.jsonl" ||
    rc=$((rc + 1))
done
exit $rc
