#!/bin/bash
# run_spread.t — test/gpu/run_spread.sh and its report, on CPU.  The report
# (run_spread.py) gets runs made up with known speeds, NCCL lines and CPU
# loop times, and must say which runs were fast per placement, which NCCL
# lines only one kind logged (not lines that differ in every run anyway)
# and how runs follow the CPU loop.  The script itself runs with a stand-in
# mpirun and app, so each placement's CPU pinning is checked too.
. "$(dirname "$0")/tap.sh"
command -v python3 >/dev/null || skip_all "no python3"
REP=$TOP/test/gpu/run_spread.py
D=$T/spread

# run PLACEMENT REP US [NCCL-LINE]: one made-up run, every size US per call,
# the CPU loop 100 x US ms, NCCL lines with a per-run address and pid.
run() {
  local d=$D/$1.$2
  mkdir -p "$d/app"
  python3 - "$d/app/sweep.json" "$3" <<'PY'
import json, sys
t = float(sys.argv[2])
json.dump({"results": [{"op": "allreduce", "bytes": b, "time_us": t, "busbw": 1.0} for b in (8, 1024, 65536)]},
          open(sys.argv[1], "w"))
PY
  echo "$(( ${3%.*} * 100 ))" >"$d/cpu_before.txt"
  echo "$(( ${3%.*} * 100 ))" >"$d/cpu_after.txt"
  {
    echo "host$2:123:456 [0] NCCL INFO comm 0x7f00$2 rank 0 nranks 2 cudaDev 0 busId 1$2000 - Init COMPLETE pid $RANDOM"
    echo "host$2:123:456 [0] NCCL INFO ${4:-}"
    echo "some other line $2"
  } >"$d/app.log"
}
run free 1 10 "Channel 00/02"; run free 2 6 "Channel 00/04"; run free 3 10 "Channel 00/02"; run free 4 10 "Channel 00/02"
run lo 1 6 "Channel 00/04"; run lo 2 6 "Channel 00/04"; run lo 3 10 "Channel 00/02"; run lo 4 9 "Channel 00/02"
python3 "$REP" "$D" >"$D/a.out" 2>&1
is "$?" 0 "the report exits 0"
like "$(head -1 "$D/a.out")" "^# 8 runs, allreduce: .* 6\.00 to 10\.00 \(slowest 1\.67x the fastest\)" "run medians' range"
like "$(grep -A2 '^placement:' "$D/a.out" | tr '\n' ' ')" "free +1 of 4 +lo +2 of 4" "fast runs per placement (the cut halfway between fastest and slowest)"
like "$(grep '^NCCL:' "$D/a.out")" "^NCCL: 1 log lines in every fast run and in no slow one, 1 the other way round$" \
  "one NCCL line apart each way: addresses, pids and hosts are no difference"
like "$(grep 'fast only' "$D/a.out")" "fast only: NCCL INFO Channel 00/04" "the fast runs' line"
like "$(grep 'slow only' "$D/a.out")" "slow only: NCCL INFO Channel 00/02" "the slow runs' line"
like "$(grep '^CPU:' "$D/a.out")" "600\.0-1000\.0 ms \(1\.67x\); Pearson r\(run median, loop ms\) = 1\.00 over 8 runs" \
  "runs that follow the CPU loop: r = 1"

# one population: no fast/slow split under 1.2x
rm -rf "$D"; run free 1 10; run free 2 10.5; run free 3 11
python3 "$REP" "$D" >"$D/b.out" 2>&1
like "$(grep '^placement:' "$D/b.out")" "one population" "runs within 1.2x: no fast and slow"
rm -rf "$D"; mkdir -p "$D"
python3 "$REP" "$D" >/dev/null 2>&1
is "$?" 1 "no run: exit 1"
python3 "$REP" >"$D/u.out" 2>&1
is "$?" 2 "no RUN_OUT: exit 2"
like "$(cat "$D/u.out")" "^usage: run_spread\.py RUN_OUT \[OP\]" "and the usage line"

# The script with a stand-in mpirun (runs the command as local rank 0) and
# app (records the CPUs it may run on, writes a sweep): on this machine's
# CPUs, NP=1 makes blocks of nproc / 2 cores.
command -v taskset >/dev/null || { done_testing; exit 0; }
F=$T/fake
mkdir -p "$F/bin"
cat >"$F/mpirun" <<'EOF'
#!/bin/bash
while [ $# -gt 0 ] && [[ $1 != */pin.sh ]]; do shift; done
OMPI_COMM_WORLD_LOCAL_RANK=0 exec "$@"
EOF
cat >"$F/bin/collprof-gpu-app" <<'EOF'
#!/bin/bash
while [ $# -gt 0 ]; do [ "$1" = --out ] && out=$2; shift; done
grep Cpus_allowed_list /proc/self/status | awk '{print $2}' >"$out/cpus"
echo '{"results": [{"op": "allreduce", "bytes": 8, "time_us": 7.0, "busbw": 1.0}]}' >"$out/sweep.json"
EOF
chmod +x "$F/mpirun" "$F/bin/collprof-gpu-app"
n=$(nproc); h=$(( n / 2 )); [ "$h" -ge 1 ] || h=1
RUN_OUT=$T/rs MPIRUN=$F/mpirun COLLPROF_BUILD=$F CPU_LOOP_N=1000 bash "$TOP/test/gpu/run_spread.sh" 1 2 >"$T/rs.out" 2>&1
is "$?" 0 "run_spread.sh runs through"
is "$(ls -d "$T"/rs/*.[0-9] | wc -l)" 8 "4 placements x 2 repetitions"
range() { [ "$1" = "$2" ] && echo "$1" || echo "$1-$2"; }
is "$(cat "$T/rs/lo.1/app/cpus")" "$(range 0 $(( h - 1 )))" "lo: the lower half's first block"
if [ "$n" -ge 2 ]; then
  is "$(cat "$T/rs/hi.1/app/cpus")" "$(range "$h" $(( 2 * h - 1 )))" "hi: the upper half's first block"
  is "$(cat "$T/rs/cross.2/app/cpus")" "$(range "$h" $(( 2 * h - 1 )))" "cross: rank 0 on block 0 of the upper half"
fi
like "$(cat "$T/rs/free.1/cpu_before.txt")" "^[0-9]+\.[0-9]$" "the CPU loop timed before a run"
like "$(grep '^# 8 runs' "$T/rs.out")" "7\.00 to 7\.00" "the report ends the script"
like "$(RUN_OUT=$T/rs2 MPIRUN=$F/mpirun COLLPROF_BUILD=$F CPU_LOOP_N=1000 PLACEMENTS=bad bash "$TOP/test/gpu/run_spread.sh" 1 1 2>&1)" \
  "unknown placement bad" "an unknown placement is refused"
if [ "$n" -lt 4 ]; then
  like "$(RUN_OUT=$T/rs3 MPIRUN=$F/mpirun COLLPROF_BUILD=$F bash "$TOP/test/gpu/run_spread.sh" 2 1 2>&1)" \
    "give 2 ranks no block of their own" "fewer than 2 CPUs a rank: only the free placement"
fi
done_testing
