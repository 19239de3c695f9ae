#!/bin/bash
# mask_flip_hang.sh — reproduces, on a GPU host, why collprof does not sample
# KernelCh by default: the do-nothing plugin that only flips KernelCh in
# NCCL's live mask (flip_plugin.c) makes NCCL 2.28.9 hang in
# ncclCommDestroy in a program that captures CUDA graphs, unless the mask is
# frozen once a captured call is seen.  Measured on 2 H200s (NCCL 2.28.9):
#   graph flip-mode 1: hung   graph flip-mode 2: hung   graph flip-mode 3: ok
#   split flip-mode 1/2/3: ok
# Usage (after `make gpu`, with . .gpu-kit/env.sh): test/gpu/mask_flip_hang.sh
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
B=${COLLPROF_BUILD:-$TOP/build}
MPIRUN=${MPIRUN:-mpirun --allow-run-as-root --oversubscribe}
R=$(mktemp -d "${TMPDIR:-/tmp}/flip.XXXXXX")
for ph in graph split; do for mode in 1 2 3; do
  n=${ph}_m$mode; mkdir -p "$R/$n"
  timeout 30 $MPIRUN -np 2 -x NCCL_NVLS_ENABLE=0 -x NCCL_PROFILER_PLUGIN="$B/lib/libnccl-profiler-flip.so" \
    -x FLIP_MODE=$mode -x FLIP_N=16 "$B/bin/collprof-gpu-app" --phases $ph --replays 10 --out "$R/$n" \
    >"$R/$n/app.log" 2>&1
  rc=$?
  echo "$ph flip-mode $mode: $([ $rc -eq 124 ] && echo hung || echo "exit $rc")"
done; done
