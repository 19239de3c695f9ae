#!/usr/bin/env bash
# demo.sh — `make demo`: a 4-rank MPI run of a real NCCL capture bundled in
# share/fixtures/ag4_net (all_gather on 4 H200 GPUs, network transport),
# replayed on the CPU through the collprof launcher, so the whole chain runs
# on any machine: plugin -> per-rank JSONL -> collation at MPI_Finalize ->
# summary.log/summary.json, then collprof-collate makes the Chrome trace
# (Perfetto), folded stacks, the message-size table and the HTML report.
#
#   COLLPROF_BUILD=build bash share/demo.sh   (the Makefile sets it)
#   COLLPROF_DEMO_DIR=...                     output folder (default <build>/demo)
set -euo pipefail
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=$(cd "${COLLPROF_BUILD:-$TOP/build}" && pwd)
BIN=$B/bin
OUT=${COLLPROF_DEMO_DIR:-$B/demo}
FIXDIR=$TOP/share/fixtures/ag4_net

for x in collprof collprof-replay collprof-collate; do
  [ -x "$BIN/$x" ] || { echo "demo: $BIN/$x missing; run make first" >&2; exit 1; }
done
# Same flags as MPIRUN in test/tap.sh: oversubscribed, shared memory only.
MPIRUN=(mpirun --oversubscribe --bind-to none --mca btl self,vader
        --mca btl_vader_single_copy_mechanism none)
[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)

rm -rf "$OUT"
echo "== mpirun -np 4 collprof -o $OUT --host-sample 1 --gpu-sample 1 -- collprof-replay share/fixtures/ag4_net/p*.jsonl"
# --host-sample 1: the replay issues the capture's calls microseconds apart,
# far faster than the GPUs did, so the default (auto) would time and trace
# one in 64 of them; the demo keeps every call in the trace.
# --gpu-sample 1: KernelCh on every call, so the GPU time table is exact.
# The capture holds 35 all-gathers per rank, most under 1 MiB, which the
# default samples one in 256: each rank would have its first call's sample
# alone (5.4-5.9 ms of connection set-up, against 0.06-0.7 ms for the
# calls after), and the table would say only that (">" and "f", see
# README "Reading the summary").  A replay costs nothing for it; on GPUs
# KernelCh on every call does (README, "No GPU times").
"${MPIRUN[@]}" -np 4 "$BIN/collprof" -o "$OUT" --host-sample 1 --gpu-sample 1 -- "$BIN/collprof-replay" "$FIXDIR"/p*.jsonl

echo "== collprof-collate $OUT --chrome ... --folded ... --html ... --sizes ..."
# --no-summary keeps the online summary (its collation section describes
# the MPI tree); the offline one would carry the same numbers.
"$BIN/collprof-collate" -q --no-summary "$OUT" --chrome "$OUT/trace.json" \
  --folded "$OUT/stacks.folded" --html "$OUT/report.html" --sizes "$OUT/sizes.txt"

cat <<EOF

collprof demo done: 4 ranks replayed the all_gather capture.
  summary        $OUT/summary.log   (and summary.json)
  rank files     $OUT/rank0.jsonl ... rank3.jsonl
  Chrome trace   $OUT/trace.json    (open in https://ui.perfetto.dev or chrome://tracing)
  HTML report    $OUT/report.html   (any browser, works offline)
  flame graph    $OUT/stacks.folded (flamegraph.pl, speedscope)
  message sizes  $OUT/sizes.txt     (calls, GPU time and bandwidth per size, all ranks)

First lines of summary.log:
EOF
head -n 40 "$OUT/summary.log" | sed 's/^/  /'
