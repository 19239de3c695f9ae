#!/bin/bash
# run_spread.sh — how far runs of one job differ in speed on this host with
# no profiler at all, and why; for a GPU host (`. .gpu-kit/env.sh` first).
# Cross-run ratios at small sizes (overhead.sh) are only as good as this
# spread: read it before trusting them.
#
#   test/gpu/run_spread.sh [NP] [REPS]     default 2 ranks, 8 repetitions
#
# Each repetition runs collprof-gpu-app's sweep (OPS, default allreduce,
# 8 B to MAX, default 64K) once per placement in PLACEMENTS (rotated from
# one repetition to the next), with NCCL_PROFILER_PLUGIN=none.  Beside each
# run: a fixed CPU loop timed just before and just after it (how fast the
# host's CPUs were at that moment), nvidia-smi's GPU clocks after it and,
# with NCCL_LOG=1, NCCL's INFO lines (INIT, GRAPH, ENV, P2P: TUNING would
# log every call and slow every run).  Then run_spread.py says which runs
# were fast or slow, per placement, what NCCL logged only in one kind, and
# whether runs followed the CPU loop.
# Placements (each rank's process pinned with taskset to a block of
# nproc / (2 NP) cores):
#   free   left to the kernel (overhead.sh and run.sh run this way)
#   lo     rank r on block r of the lower half of the CPUs
#   hi     rank r on block r of the upper half
#   cross  even ranks on the upper half, odd ones on the lower, rank r on
#          block r/2 of its half (2 ranks: rank 0 where hi puts rank 0,
#          rank 1 where lo puts rank 0)
# CPU_LOOP_N (default 1000000) sets the loop's turns (Python); ITERS and
# WARMUP (200, 20) the app's calls per size.  Output folders stay in
# $RUN_OUT (default a temporary folder); the report is also
# RUN_OUT/report.txt.
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
B=${COLLPROF_BUILD:-$TOP/build}
APP=$B/bin/collprof-gpu-app
NP=${1:-2}
REPS=${2:-8}
MAX=${MAX:-64K}
OPS=${OPS:-allreduce}
PLACEMENTS=${PLACEMENTS:-free lo hi cross}
RUN_OUT=${RUN_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/collprof-spread.XXXXXX")}
MPIRUN=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe}
[ -x "$APP" ] || { echo "run_spread.sh: missing $APP (make gpu)"; exit 1; }
[[ $NP =~ ^[1-9][0-9]*$ && $REPS =~ ^[1-9][0-9]*$ ]] || { echo "run_spread.sh: NP and REPS are counts"; exit 2; }
ncpu=$(nproc)
blk=$(( ncpu / (2 * NP) ))
if [ "$blk" -lt 1 ] && [ "${PLACEMENTS:-x}" != free ]; then
  echo "run_spread.sh: $ncpu CPUs give $NP ranks no block of their own in each half: PLACEMENTS=free only"; exit 2
fi
mkdir -p "$RUN_OUT"

# The wrapper each rank runs under: pins its process (and so every thread
# it starts: NCCL's proxy thread too) to its placement's block.
W=$RUN_OUT/pin.sh
cat >"$W" <<EOF
#!/bin/bash
r=\${OMPI_COMM_WORLD_LOCAL_RANK:-0}; p=\$1; shift
case \$p in
  lo) b=\$r; o=0 ;;
  hi) b=\$r; o=$(( ncpu / 2 )) ;;
  cross) b=\$(( r / 2 )); o=\$(( r % 2 ? 0 : $(( ncpu / 2 )) )) ;;
  *) exec "\$@" ;;
esac
f=\$(( o + b * $blk ))
exec taskset -c \$f-\$(( f + $blk - 1 )) "\$@"
EOF
chmod +x "$W"

cpu_loop() {   # ms a fixed loop on one CPU takes now (CPU_LOOP_N turns)
  python3 -c 'import sys, time
t = time.perf_counter(); s = 0
for i in range(int(sys.argv[1])): s += i * i
print("%.1f" % ((time.perf_counter() - t) * 1e3))' "${CPU_LOOP_N:-1000000}"
}

read -r -a pl <<<"$PLACEMENTS"
for p in "${pl[@]}"; do
  case $p in free|lo|hi|cross) ;; *) echo "run_spread.sh: unknown placement $p"; exit 2 ;; esac
done
LOG_ENV=()
[ "${NCCL_LOG:-0}" = 1 ] && LOG_ENV=(-x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=INIT,GRAPH,ENV,P2P)
for rep in $(seq 1 "$REPS"); do
  for k in $(seq 0 $(( ${#pl[@]} - 1 ))); do
    p=${pl[$(( (k + rep) % ${#pl[@]} ))]}
    d=$RUN_OUT/$p.$rep
    mkdir -p "$d/app"
    cpu_loop >"$d/cpu_before.txt"
    timeout "${APP_TIMEOUT:-120}" $MPIRUN --bind-to none -np "$NP" -x NCCL_NVLS_ENABLE=0 -x NCCL_PROFILER_PLUGIN=none \
      ${LOG_ENV[@]+"${LOG_ENV[@]}"} "$W" "$p" "$APP" --phases sweep --ops "$OPS" --max "$MAX" --iters "${ITERS:-200}" \
      --warmup "${WARMUP:-20}" --out "$d/app" >"$d/app.log" 2>&1 || echo "run_spread.sh: $p.$rep exited $?"
    cpu_loop >"$d/cpu_after.txt"
    nvidia-smi --query-gpu=index,clocks.sm,clocks.mem,pstate --format=csv,noheader >"$d/clocks.txt" 2>/dev/null
  done
done
python3 "$TOP/test/gpu/run_spread.py" "$RUN_OUT" "${OPS%%,*}" | tee "$RUN_OUT/report.txt"
