#!/bin/bash
# gpu.t — collprof on real GPUs (test/gpu/run.sh): exact counts per path,
# GPU times, rank files that parse.  Skips on machines without a GPU, and
# under sanitizers (mpirun with preloads).
. "$(dirname "$0")/tap.sh"
command -v nvidia-smi >/dev/null 2>&1 || skip_all "no nvidia-smi: no GPU here"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[ "$ngpu" -ge 2 ] || skip_all "needs 2 GPUs, found $ngpu"
[ -z "${SAN:-}" ] || skip_all "not under SAN=$SAN"
[ -x "$BIN/collprof-gpu-app" ] || skip_all "collprof-gpu-app not built (make gpu: no nvcc/nccl.h?)"
RUN_OUT=$T bash "$TOP/test/gpu/run.sh" 2 4 >"$T/run.log" 2>&1
rc=$?
sed 's/^/# /' "$T/run.log" | tail -n 60
is "$rc" 0 "test/gpu/run.sh: every check passed"
done_testing
