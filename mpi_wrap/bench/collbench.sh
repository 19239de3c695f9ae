#!/usr/bin/env bash
# collbench.sh — the collation benchmark at several rank counts (figures,
# not a test): P ranks (oversubscribed on this machine) with M paths each,
# half shared by all ranks and half unique, through the same tree merge
# and reductions MPI_Finalize uses.  `make bench` runs it after the CPU
# cost-per-event benchmark.  Usage: collbench.sh [M] [P ...]
set -u
B=${COLLPROF_BUILD:-build}
m=${1:-2000}; shift || true
ps=("$@"); [ ${#ps[@]} -gt 0 ] || ps=(2 8 32 64)
run=(mpirun --oversubscribe --bind-to none --mca btl self,vader)
[ "$(id -u)" -eq 0 ] && run+=(--allow-run-as-root)
echo "collation benchmark: $m paths per rank (half shared), medians of 3 runs"
echo "(anchor, Vftrace 2.0 at 64 x 2000: 0.58 s collation, 1.56 CPU-s, rank 0 +34 MiB;"
echo " goal at 64 x 2000: < 0.2 s, < 0.3 CPU-s, no rank growing by more than 16 MiB)"
for p in "${ps[@]}"; do
  for i in 1 2 3; do "${run[@]}" -np "$p" "$B/bin/collprof-collbench" -m "$m" 2>&1; done |
    python3 -c '
import re, sys, statistics as st
t = sys.stdin.read()
def med(pat):
    v = [float(x) for x in re.findall(pat, t)]
    return st.median(v) if v else float("nan")
print("P=%-3s rounds %d  wall rank0 %.3f s  slowest %.3f s  CPU all ranks %.3f s  memory growth %.1f MiB  ids consistent: %s" % (
    sys.argv[1], med(r"rounds (\d+)"), med(r"wall rank0 ([\d.]+) s"), med(r"wall slowest ([\d.]+) s"),
    med(r"CPU all ranks ([\d.]+) s"), med(r"largest memory growth ([\d.]+) MiB"),
    "yes" if t.count("consistent: yes") == 3 else "NO"))' "$p"
done
