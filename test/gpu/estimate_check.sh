#!/bin/bash
# estimate_check.sh — the sampled GPU estimate against KernelCh measured on
# every call, on the whole test app, on a GPU host (after
# `. .gpu-kit/env.sh`).
#
#   test/gpu/estimate_check.sh [NP [PAIRS]]     default: 4 ranks, 6 pairs
#
# Alternates PAIRS times a run with KernelCh on every call
# (COLLPROF_GPU_SAMPLE=1) and one with collprof's default sampling
# (COLLPROF_GPU_SAMPLE=${N:-16}), both of collprof-gpu-app --phases all
# (sweep, split, graph) with the trace off; then estimate_check.py prints,
# per Coll path, the measured GPU time per call against the estimate with
# and without the outlier clause.  Runs stay in $RUN_OUT (n1.K, nN.K).
# GPU_SAMPLE_US sets COLLPROF_GPU_SAMPLE_US (unset: collprof's default, 0,
# one call in N), to compare the spacing's estimate; GPU_SAMPLE_SMALL sets
# COLLPROF_GPU_SAMPLE_SMALL (unset: the default, calls under 1 MiB one in
# 16 N; 1: every call one in N), to compare the small calls' rate, and
# GPU_SAMPLE_SMALL_BYTES sets COLLPROF_GPU_SAMPLE_SMALL_BYTES.
# A report, not a check: runs of this app differ by up to 3x (its split
# phase), so only the distributions say anything.  Each run takes about
# 6 s on H200 (4 ranks).
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
B=${COLLPROF_BUILD:-$TOP/build}
NP=${1:-4}
PAIRS=${2:-6}
N=${N:-16}
APP=$B/bin/collprof-gpu-app
PLUGIN=$B/lib/libcollprof.so
MPILIB=$B/lib/libcollprof-mpi.so
RUN_OUT=${RUN_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/collprof-estimate.XXXXXX")}
MPIRUN=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe}
MPI_BIND=${MPI_BIND---bind-to none}   # as overhead.sh: the proxy needs its own core
export NCCL_NVLS_ENABLE=0
for f in "$APP" "$PLUGIN" "$MPILIB"; do
  [ -e "$f" ] || { echo "estimate_check.sh: missing $f"; exit 1; }
done
[ "$N" -ge 2 ] 2>/dev/null || { echo "estimate_check.sh: N must be >= 2 (got $N)"; exit 2; }

one() {   # SAMPLE REP
  local d=$RUN_OUT/n$1.$2
  mkdir -p "$d/app"
  timeout 120 $MPIRUN $MPI_BIND -np "$NP" -x NCCL_NVLS_ENABLE=0 -x LD_PRELOAD="$MPILIB" \
    -x NCCL_PROFILER_PLUGIN="$PLUGIN" -x COLLPROF_OUTPUT_DIR="$d/prof" -x COLLPROF_QUIET=1 \
    -x COLLPROF_TRACE=0 -x COLLPROF_GPU_SAMPLE="$1" ${GPU_SAMPLE_US:+-x COLLPROF_GPU_SAMPLE_US=$GPU_SAMPLE_US} \
    ${GPU_SAMPLE_SMALL:+-x COLLPROF_GPU_SAMPLE_SMALL=$GPU_SAMPLE_SMALL} \
    ${GPU_SAMPLE_SMALL_BYTES:+-x COLLPROF_GPU_SAMPLE_SMALL_BYTES=$GPU_SAMPLE_SMALL_BYTES} \
    "$APP" --out "$d/app" --phases all --iters 20 --warmup 5 >"$d/app.log" 2>&1
  local rc=$?
  echo "run N=$1 #$2: rc $rc"
  [ $rc = 0 ] || { rm -rf "$d"; return 1; }
}
fail=0
for k in $(seq 1 "$PAIRS"); do
  one 1 "$k" || fail=1
  one "$N" "$k" || fail=1
done
shopt -s nullglob
m=("$RUN_OUT"/n1.*)
s=("$RUN_OUT"/n"$N".*)
[ ${#m[@]} -gt 0 ] && [ ${#s[@]} -gt 0 ] || { echo "estimate_check.sh: no complete pair of runs"; exit 1; }
python3 "$TOP/test/gpu/estimate_check.py" --measured "${m[@]}" --sampled "${s[@]}"
echo "runs in $RUN_OUT"
exit $fail
