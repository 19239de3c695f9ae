#!/bin/bash
# run.sh — collprof on real GPUs: collprof-gpu-app under collprof (MPI
# library preloaded), checked against the app's own counts.  For a GPU host
# (test/gpu.t runs it; see ../shared/gpu/README.md: `. .gpu-kit/env.sh`).
#
#   test/gpu/run.sh [NP ...]       default: 2 and 4 (those the GPUs allow);
#                                  1: the one-rank check alone (one_rank_check)
#
# For each NP: the app with every phase (sweep of all ops, split
# communicator, CUDA graph) on NP ranks, one GPU each, then check_run.py
# (exact calls per Coll/P2p path and bytes, GPU times, every rank file
# parses); then a sweep of sizes >= 1 MiB, 200 calls each queued behind a
# spinning kernel (--gpu-bound), checked the same way and by gpu_time.py
# (sampled vs CUDA-event time within 20%, with launches timed in runs of
# 8, the default) and its message-size table (collprof-collate --sizes,
# sizes_oracle.py against summary.json), again with single timed launches (COLLPROF_LAUNCH_RUN=1)
# and as a plain loop (both shown, not judged; launch_skew.py sets the
# plain loop's timed launches on rank 0 beside rank 1's), and with the
# app's own kernel between calls.
# Then lean calls on the network transport (P2P and SHM off): the proxy
# events lean calls hide, estimated, against a run with every call
# recorded (lean_check.py --gpu).
# Then, when there are 2 GPUs or more, one process driving 2 GPUs from two
# threads.  Output folders stay in $RUN_OUT (default a temporary folder).
# APP_ARGS adds app options to every run (e.g. "--phases sweep,split");
# APP_TIMEOUT (default 180 s) bounds each run: a hang fails the step.
# Exit status: number of failed steps.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
B=${COLLPROF_BUILD:-$TOP/build}
APP=$B/bin/collprof-gpu-app
PLUGIN=$B/lib/libcollprof.so
MPILIB=$B/lib/libcollprof-mpi.so
RUN_OUT=${RUN_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/collprof-gpu.XXXXXX")}
MPIRUN=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe}
# Each rank gets more than one core: NCCL's proxy thread (and collprof's
# trace writer) must not share one with the application, as Open MPI's
# default --bind-to core for <= 2 ranks would make them (src/affinity.c).
MPI_BIND=${MPI_BIND---bind-to none}
MPIRUN="$MPIRUN $MPI_BIND"
export NCCL_NVLS_ENABLE=0
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
fail=0
for f in "$APP" "$PLUGIN" "$MPILIB"; do
  [ -e "$f" ] || { echo "run.sh: missing $f"; exit 1; }
done
nps=("$@")
[ ${#nps[@]} -gt 0 ] || nps=(2 4)

# one run: NAME NP APP-ARGS...
run() {
  local name=$1 np=$2; shift 2
  local d=$RUN_OUT/$name
  mkdir -p "$d/app"
  echo "== $name: $np process(es): $APP $*"
  # shellcheck disable=SC2086
  timeout "${APP_TIMEOUT:-180}" $MPIRUN -np "$np" -x NCCL_NVLS_ENABLE=0 -x LD_PRELOAD="$MPILIB" \
    -x NCCL_PROFILER_PLUGIN="$PLUGIN" -x COLLPROF_OUTPUT_DIR="$d/prof" -x COLLPROF_QUIET=1 \
    ${COLLPROF_LAUNCH_SAMPLE:+-x COLLPROF_LAUNCH_SAMPLE=$COLLPROF_LAUNCH_SAMPLE} \
    ${COLLPROF_LAUNCH_INTERVAL_US:+-x COLLPROF_LAUNCH_INTERVAL_US=$COLLPROF_LAUNCH_INTERVAL_US} \
    ${COLLPROF_LAUNCH_RUN:+-x COLLPROF_LAUNCH_RUN=$COLLPROF_LAUNCH_RUN} \
    ${COLLPROF_HOST_SAMPLE:+-x COLLPROF_HOST_SAMPLE=$COLLPROF_HOST_SAMPLE} \
    ${COLLPROF_LEAN:+-x COLLPROF_LEAN=$COLLPROF_LEAN} \
    ${NCCL_P2P_DISABLE:+-x NCCL_P2P_DISABLE=$NCCL_P2P_DISABLE} ${NCCL_SHM_DISABLE:+-x NCCL_SHM_DISABLE=$NCCL_SHM_DISABLE} \
    "$APP" --out "$d/app" "$@" ${APP_ARGS:-} >"$d/app.log" 2>&1
  local rc=$?
  grep -E '^collprof|avg bus' "$d/app.log" | sed 's/^/   /' | tail -n 20
  if [ $rc -ne 0 ]; then echo "not ok - $name: app exited $rc"; fail=$((fail + 1)); return; fi
  # (np alone does not tell: the threads2 runs below are one process of two GPUs)
  if [ -n "${ONE_RANK:-}" ]; then one_rank_check "$d" || fail=$((fail + 1)); return; fi
  LAUNCH_ALL=${LAUNCH_ALL:-0} python3 "$TOP/test/gpu/check_run.py" "$d/app" "$d/prof" || fail=$((fail + 1))
}

# One rank: NCCL 2.28 runs a one-rank communicator's calls as a local copy
# and sends the profiler no event (src/plugin.c, init_common), so collprof
# has nothing to count; what it must do is say so: its stderr line, the
# communicators marked unprofiled in summary.json, and no path.
one_rank_check() {
  python3 - "$1" <<'PY'
import glob, json, sys
d = sys.argv[1]
calls = sum(f["api"] for path in glob.glob(d + "/app/counts.*.json") for t in json.load(open(path))["threads"]
            for c in t["comms"] for f in c["funcs"].values())
s = json.load(open(d + "/prof/summary.json"))
log = open(d + "/app.log").read()
checks = [
    ("the app made calls (%d)" % calls, calls > 0),
    ("collprof's stderr line names the one-rank communicator", "has one rank: NCCL sends no profiler event" in log),
    ("summary.json: every communicator of one rank, marked unprofiled (%s)" % [c["commName"] for c in s["comms"]],
     s["comms"] and all(c["nranks"] == 1 and "unprofiled" in c for c in s["comms"])),
    ("summary.json: no path, no event (%d paths, %d events)" % (len(s["paths"]), s["events_recorded"]),
     not s["paths"] and s["events_recorded"] == 0),
]
for name, good in checks:
    print("%s - %s" % ("ok" if good else "not ok", name))
sys.exit(0 if all(g for _, g in checks) else 1)
PY
}

for np in "${nps[@]}"; do
  if [ "$np" -gt "$ngpu" ]; then echo "# skip $np ranks: $ngpu GPU(s)"; continue; fi
  if [ "$np" -eq 1 ]; then   # one_rank_check above
    ONE_RANK=1 run one1 1 --iters 5 --warmup 1 --max 1M
    continue
  fi
  # the defaults (host sampling auto named: test/tap.sh pins 1 for replays)
  COLLPROF_HOST_SAMPLE=auto run "np$np" "$np" --iters 20 --warmup 5
  # Host sampling (src/call_modes.h): one API call in 16 timed and traced, the
  # others only counted; calls and bytes per path must stay exact.
  COLLPROF_HOST_SAMPLE=16 run "hs$np" "$np" --iters 20 --warmup 5
  # Every call timed and traced (the default, auto, src/host_sample.h,
  # samples the small sizes and times the large ones at every call).
  COLLPROF_HOST_SAMPLE=1 run "h1$np" "$np" --iters 20 --warmup 5
  # Every kernel launch timed (src/launch_timer.h): the graph phase's
  # launches on the capturing stream must be skipped (the app's graph would
  # fail or hold the events otherwise), the rest read by finalize.
  COLLPROF_LAUNCH_SAMPLE=1 COLLPROF_LAUNCH_INTERVAL_US=0 LAUNCH_ALL=1 \
    run "lt$np" "$np" --iters 20 --warmup 5 --max 4M
  # Sampled GPU time against CUDA events gets a sweep of its own, sizes
  # from 1 MiB, 200 timed calls each: 20 calls give a size one or two
  # samples, too few for a median; 200 give a 1 MiB size 13-15 (H200,
  # default 1 in 16; larger sizes fewer, one sample being in flight at a
  # time).  COLLPROF_LAUNCH_SAMPLE=16 (default 64) and no least interval
  # (default 5 ms, which at 1 MiB would leave a size one sample): 12-14
  # timed launches per size, in runs of 8 (the default COLLPROF_LAUNCH_RUN,
  # launch_timer.h "Runs": the events' own cost shared 8 ways).  Judged
  # with the calls queued behind a spinning kernel (--gpu-bound), so that
  # the CUDA events time the GPU: in a plain loop, timing that many
  # launches turns 1 MiB on 2 H200s host-bound (the gp step below).
  COLLPROF_LAUNCH_SAMPLE=16 COLLPROF_LAUNCH_INTERVAL_US=0 \
    run "gt$np" "$np" --phases sweep --min 1M --iters 200 --warmup 20 --gpu-bound
  # The same with single timed launches (COLLPROF_LAUNCH_RUN=1), shown
  # beside it, not judged: each carries its event pair's 5-9 us, which at
  # 1 MiB on 4 H200s put three collectives at 1.41-1.46 of the CUDA-event
  # time (why runs are the default).
  COLLPROF_LAUNCH_SAMPLE=16 COLLPROF_LAUNCH_INTERVAL_US=0 COLLPROF_LAUNCH_RUN=1 \
    run "gs$np" "$np" --phases sweep --min 1M --iters 200 --warmup 20 --gpu-bound
  # The judged sweep as a plain back-to-back loop, shown, not judged.
  # With one launch in 16 timed, 1 MiB calls on 2 H200s took 12.0-15.6 us
  # against 10.4-11.0 without a plugin and 10.7-12.2 with collprof's
  # defaults: the host, not the GPU, sets the pace, and the CUDA-event time
  # holds its gaps.  There the GPU is rarely behind when a launch is timed,
  # and when it is, a peer has usually fallen behind and this rank's
  # kernels wait for it too, so the few busy launches read high (up to
  # 1.64 of the CUDA-event time).  launch_skew.py sets rank 0's timed
  # launches beside the peer's to show it.
  COLLPROF_LAUNCH_SAMPLE=16 COLLPROF_LAUNCH_INTERVAL_US=0 \
    run "gp$np" "$np" --phases sweep --min 1M --iters 200 --warmup 20
  # Runs must not span the application's own work: a 20 us kernel queued
  # on the stream after every call (runs dropped at the gap, or else read
  # about 20 us high per launch: interleave_check.py).
  COLLPROF_LAUNCH_SAMPLE=16 COLLPROF_LAUNCH_INTERVAL_US=0 COLLPROF_LAUNCH_RUN=8 \
    run "gi$np" "$np" --phases sweep --ops allreduce,allgather --min 1M --max 16M --iters 200 --warmup 20 \
    --interleave-us 20
  if [ -e "$RUN_OUT/gi$np/app/sweep.json" ]; then
    echo "== gi$np: timed launches with the app's kernel between calls"
    python3 "$TOP/test/gpu/interleave_check.py" "$RUN_OUT/gi$np/app/sweep.json" \
      "$RUN_OUT/gi$np/prof/rank0.jsonl" || fail=$((fail + 1))
  fi
  for g in gt gs gp; do
    [ -e "$RUN_OUT/$g$np/app/sweep.json" ] || continue
    echo "== $g$np: sampled GPU time vs CUDA events (COLLPROF_GPU_SAMPLE default)$(case $g in
      gs) echo ', single launches, not judged' ;; gp) echo ', plain loop, not judged' ;; esac)"
    python3 "$TOP/test/gpu/gpu_time.py" $([ $g = gt ] || echo --shown) "$RUN_OUT/$g$np/app/sweep.json" \
      "$RUN_OUT/$g$np/prof/rank0.jsonl" || [ $g != gt ] || fail=$((fail + 1))
  done
  # the message-size table of the GPU-bound sweep (collprof-collate --sizes):
  # shown, and held to summary.json (calls, samples, GPU time per class)
  if [ -d "$RUN_OUT/gt$np/prof" ]; then
    echo "== gt$np: message sizes (collprof-collate --sizes) against summary.json"
    "$B/bin/collprof-collate" -q --no-summary "$RUN_OUT/gt$np/prof" --sizes "$RUN_OUT/gt$np/sizes.txt" &&
      python3 "$TOP/test/sizes_oracle.py" "$RUN_OUT/gt$np/prof" "$RUN_OUT/gt$np/sizes.txt" summary ||
      fail=$((fail + 1))
    grep -E "^ID|MiB" "$RUN_OUT/gt$np/sizes.txt" | sed 's/^/   /' | head -n 30
  fi
  if [ -e "$RUN_OUT/gp$np/prof/rank1.jsonl" ]; then
    echo "== gp$np: rank 0's timed launches beside rank 1's"
    python3 "$TOP/test/gpu/launch_skew.py" "$RUN_OUT/gp$np/prof/rank0.jsonl" "$RUN_OUT/gp$np/prof/rank1.jsonl"
  fi
  # Lean calls on the network transport (P2P and SHM off, as between
  # nodes: ProxyOps and ProxySteps in every call, 4 to 16 steps by size):
  # the sweep with every call recorded (COLLPROF_LEAN=0) against the
  # defaults and --host-sample 16, rank by rank (test/lean_check.py --gpu):
  # API and Coll/P2p calls and bytes exact, the proxy events the lean calls
  # hid estimated within 10% (src/lean_estimate.h; on 2 H200s within 2.4%,
  # where the single ratio used before was up to 21% high).
  net=(--phases sweep --ops allreduce,allgather,reducescatter --max 4M --iters 20 --warmup 5)
  NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 COLLPROF_LEAN=0 COLLPROF_HOST_SAMPLE=1 run "nr$np" "$np" "${net[@]}"
  for hs in auto 16; do
    NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 COLLPROF_HOST_SAMPLE=$hs run "nl$hs-$np" "$np" "${net[@]}"
    echo "== nl$hs-$np: lean estimates against every call recorded (nr$np)"
    for ((r = 0; r < np; r++)); do
      out=$(python3 "$TOP/test/lean_check.py" "$RUN_OUT/nr$np/prof/rank$r.jsonl" \
        "$RUN_OUT/nl$hs-$np/prof/rank$r.jsonl" "nl$hs-$np rank $r" --gpu --some-lean --tol 0.10 2>&1)
      echo "$out"
      if grep -q '^FAIL' <<<"$out"; then fail=$((fail + 1)); fi
    done
  done
done
if [ "$ngpu" -ge 2 ]; then
  run threads2 1 --gpus-per-proc 2 --iters 10 --warmup 2 --max 4M
  COLLPROF_HOST_SAMPLE=16 run hs-threads2 1 --gpus-per-proc 2 --iters 10 --warmup 2 --max 4M
  # the same with two CUDA contexts in one process timing every launch
  COLLPROF_LAUNCH_SAMPLE=1 COLLPROF_LAUNCH_INTERVAL_US=0 LAUNCH_ALL=1 \
    run lt-threads2 1 --gpus-per-proc 2 --iters 10 --warmup 2 --max 4M
  # Where the communicator is initialized, against the automatic start
  # delay (src/start_delay.c, "Start delay"): on the thread that calls,
  # or by NCCL's own threads (a group of two inits, gone by the first
  # call): no delay; on the main thread, alive while a worker calls: the
  # delay runs (the rank records' gpuSampleDelayMs, as it ran)
  for io in thread:0 main:100 main-grouped:0; do
    where=${io%%:*} want=${io##*:}
    run "init-$where" 2 --init-on "$where" --phases sweep --ops allreduce --max 64K --iters 10 --warmup 2
    out=$(python3 - "$RUN_OUT/init-$where/prof" "$want" "$where" <<'PY'
import glob, json, sys
d, want, where = sys.argv[1], int(sys.argv[2]), sys.argv[3]
got = []
for f in sorted(glob.glob(d + "/rank*.jsonl")):
    for line in open(f):
        r = json.loads(line)
        if r.get("recordType") == "rank":
            got.append((r["gpuSampleDelayMs"], r["gpuSampleDelayAuto"]))
ok = len(got) == 2 and all(g == (want, 1) for g in got)
print("%s - init on %s: the automatic start delay %s ms on both ranks (gpuSampleDelayMs, auto: %s)" %
      ("ok" if ok else "not ok", where, want, got))
PY
)
    echo "$out"
    case $out in ok*) ;; *) fail=$((fail + 1)) ;; esac
  done
fi
echo "# run.sh: $fail failed step(s); outputs in $RUN_OUT"
exit $fail
