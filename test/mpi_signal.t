#!/usr/bin/env bash
# mpi_signal.t — a job killed by SIGTERM (mpirun aborting) still leaves its
# measurements on disk as whole JSONL lines: the MPI layer's handler flushes
# the plugin's buffers with async-signal-safe writes and no MPI.
. "$(dirname "$0")/tap.sh"
[ -n "${SAN:-}" ] && skip_all "multi-rank MPI tests run in the plain build only"
command -v mpirun >/dev/null || skip_all "mpirun not found"
plan 5
out=$T/run
# A synthetic stream far longer than the test waits: it is still running
# when the signal comes.  A small trace ring keeps the backlog the handler
# must write small: Open MPI sends SIGKILL 1 s after SIGTERM, and a flood
# of events on a loaded 2-core machine could otherwise outlast that.
"${MPIRUN[@]}" -np 2 -x LD_PRELOAD="$LIB/libcollprof-mpi.so" -x COLLPROF_OUTPUT_DIR="$out" \
  -x COLLPROF_QUIET=1 -x COLLPROF_TRACE_BUFFER=4096 \
  "$BIN/collprof-replay" --synthetic threads --threads 1 --count 100000000 \
  >"$T/mpirun.out" 2>&1 &
pid=$!
# Wait until both ranks have written events to disk, then stop the job.
for _ in $(seq 1 200); do
  [ "$(stat -c %s "$out/rank0.jsonl" 2>/dev/null || echo 0)" -gt 100000 ] &&
    [ "$(stat -c %s "$out/rank1.jsonl" 2>/dev/null || echo 0)" -gt 100000 ] && break
  sleep 0.1
done
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
