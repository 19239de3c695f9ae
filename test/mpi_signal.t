#!/usr/bin/env bash
# mpi_signal.t — a job killed by SIGTERM (mpirun aborting) still leaves its
# measurements on disk as whole JSONL lines: the MPI layer's handler flushes
# the plugin's buffers with async-signal-safe writes and no MPI.
. "$(dirname "$0")/tap.sh"
[ -n "${SAN:-}" ] && skip_all "multi-rank MPI tests run in the plain build only"
command -v mpirun >/dev/null || skip_all "mpirun not found"
plan 5
out=$T/run
# --timed keeps the recorded gaps: the ar_nvlink capture lasts about 3.4 s.
"${MPIRUN[@]}" -np 2 -x LD_PRELOAD="$LIB/libcollprof-mpi.so" -x COLLPROF_OUTPUT_DIR="$out" \
  -x COLLPROF_QUIET=1 -x COLLPROF_TRACE_BUFFER=1048576 \
  "$BIN/collprof-replay" --timed "$FIX/ar_nvlink/p0.jsonl" "$FIX/ar_nvlink/p1.jsonl" \
  >"$T/mpirun.out" 2>&1 &
pid=$!
# Wait until both ranks have started replaying (their trace files exist),
# then let them record events (the capture's first collectives come about 2 s in).
for _ in $(seq 1 100); do
  [ -e "$out/rank0.jsonl" ] && [ -e "$out/rank1.jsonl" ] && break
  sleep 0.1
done
sleep 2.5
kill -TERM $pid
wait $pid
rc=$?
ok "mpirun ended by the signal (status $rc)" test $rc -ne 0
ok "both rank files exist" test -s "$out/rank0.jsonl" -a -s "$out/rank1.jsonl"
ok "no summary: the job never reached MPI_Finalize" test ! -e "$out/summary.json"
ok "every line of every rank file is whole JSON" python3 -c '
import json, sys
n = 0
for f in sys.argv[1:]:
    for i, line in enumerate(open(f), 1):
        json.loads(line); n += 1
print(n, "lines")' "$out/rank0.jsonl" "$out/rank1.jsonl"
ok "event records were flushed by the handler" bash -c "grep -c '\"recordType\":\"event\"' '$out/rank0.jsonl' | awk '\$1 > 10 {ok=1} END {exit !ok}'"
