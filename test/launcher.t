#!/usr/bin/env bash
# launcher.t — the `collprof` launcher: options reach the program's
# environment, bad options exit 2 without starting the program, the user's
# LD_PRELOAD is kept (ours prepended), MPI programs get libcollprof-mpi.so
# and others libcollprof.so, --help/--version/--list-events work.
#
# Most checks point COLLPROF_LIBDIR at tiny stand-in libraries built here,
# so they test the launcher alone; one check uses the real build's lib/.
. "$(dirname "$0")/tap.sh"
CP=$BIN/collprof
[ -x "$CP" ] || skip_all "no $CP (build first)"
cd "$T" || exit 1
# A sanitized launcher started with the user's LD_PRELOAD would refuse to run
# because its runtime is not first in the library list; that is the
# sanitizer's rule, not the launcher's.
[ -n "${SAN:-}" ] && export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

# Stand-in libraries (valid ELF, so ld.so preloads them without noise).
mkdir -p fake
echo 'int cp_stand_in;' | gcc -shared -fPIC -x c - -o fake/libcollprof.so
cp fake/libcollprof.so fake/libcollprof-mpi.so
FAKE=$(cd fake && pwd -P)
USERLIB=$(gcc -print-file-name=libm.so.6)
USERLIB=$(readlink -f "$USERLIB")
# The program: prints its environment and arguments, leaves a marker.
cat >prog <<'EOF'
#!/bin/sh
touch "$(dirname "$0")/started"
env
for a in "$@"; do echo "ARG=$a"; done
EOF
chmod +x prog
run() { rm -f started; COLLPROF_LIBDIR=$FAKE "$CP" "$@" >out 2>err; echo $? >rc; }
val() { sed -n "s/^$1=//p" out | head -n 1; }

# --help, --version, --list-events
"$CP" --help >out 2>err
is "$?" 0 "--help exits 0"
ok "--help shows the usage and every option" bash -c \
  'grep -q "^Usage: collprof \[options\] \[--\] program" out && for o in --output --events --trace --no-trace --gpu-sample --host-sample --seed --periods --paused --rank-logs --capture --collate --quiet --mpi --no-mpi --list-events --help --version; do grep -q -- "$o" out || { echo "missing $o"; exit 1; }; done'
ver=$(sed -n 's/^#define COLLPROF_VERSION "\(.*\)"/\1/p' "$TOP/include/collprof.h")
is "$("$CP" --version)" "collprof $ver" "--version prints COLLPROF_VERSION"
"$CP" --list-events >out 2>err
is "$?" 0 "--list-events exits 0"
ok "--list-events names every type with its bit" bash -c '
  set -e; v=1
  for n in Group Coll P2p ProxyOp ProxyStep ProxyCtrl KernelCh NetPlugin GroupApi CollApi P2pApi KernelLaunch; do
    grep -Eq "^ +$n +0x[0-9a-f]+ +$v " out || { echo "no $n = $v"; exit 1; }; v=$((v * 2)); done'
def=$((4095 & ~64))
ok "--list-events gives the default mask ($def) and GPU sampling 1 in 16" \
  bash -c "grep -q 'Default mask: .*($def).*KernelCh sampled on 1 call in 16' out"

# Options reach the environment.
run -o outdir -e Coll,P2p --no-trace --gpu-sample 4 --periods 1.5:2:3 --paused --rank-logs 0,2-3 \
    --capture -q -- ./prog
is "$(cat rc)" 0 "program runs"
is "$(val COLLPROF_OUTPUT_DIR)" "$(pwd)/outdir" "-o: COLLPROF_OUTPUT_DIR, made absolute"
is "$(val NCCL_PROFILE_EVENT_MASK)" "$((2 | 4))" "-e Coll,P2p: mask 6"
is "$(val COLLPROF_TRACE)" 0 "--no-trace: COLLPROF_TRACE=0"
is "$(val COLLPROF_GPU_SAMPLE)" 4 "--gpu-sample 4"
is "$(val COLLPROF_PERIODS)" 1.5:2:3 "--periods"
is "$(val COLLPROF_START_PAUSED)" 1 "--paused: COLLPROF_START_PAUSED=1"
is "$(val COLLPROF_RANK_LOGS)" 0,2-3 "--rank-logs"
is "$(val COLLPROF_CAPTURE)" 1 "--capture"
is "$(val COLLPROF_QUIET)" 1 "-q"
is "$(val NCCL_PROFILER_PLUGIN)" "$FAKE/libcollprof.so" "NCCL_PROFILER_PLUGIN: absolute path of libcollprof.so"
run --events=kernelch,COLL,ncclProfileProxyOp ./prog
is "$(val NCCL_PROFILE_EVENT_MASK)" "$((64 | 2 | 8))" "-e names are case-insensitive, ncclProfile prefix allowed"
run -e 0xfff ./prog
is "$(val NCCL_PROFILE_EVENT_MASK)" 4095 "-e 0xfff"
run -e 4031 ./prog
is "$(val NCCL_PROFILE_EVENT_MASK)" 4031 "-e 4031 (decimal)"
run -e all ./prog
is "$(val NCCL_PROFILE_EVENT_MASK)" 4095 "-e all"
run --trace ./prog
is "$(val COLLPROF_TRACE)" 1 "--trace: COLLPROF_TRACE=1"
run --host-sample 16 ./prog
is "$(val COLLPROF_HOST_SAMPLE)" 16 "--host-sample 16"
run --host-sample AUTO ./prog
is "$(val COLLPROF_HOST_SAMPLE)" auto "--host-sample auto (any case): COLLPROF_HOST_SAMPLE=auto"
run --seed 0xfeedface12345678 ./prog
is "$(val COLLPROF_SAMPLE_SEED)" 0xfeedface12345678 "--seed 0x...: COLLPROF_SAMPLE_SEED as given"
run --seed 18446744073709551615 ./prog
is "$(val COLLPROF_SAMPLE_SEED)" 18446744073709551615 "--seed 2^64-1 (decimal) taken"
rm -f started; COLLPROF_TRACE=0 COLLPROF_GPU_SAMPLE=7 COLLPROF_LIBDIR=$FAKE "$CP" ./prog >out 2>&1
is "$(val COLLPROF_TRACE),$(val COLLPROF_GPU_SAMPLE)" "0,7" "variables set by the user pass through"
rm -f started; COLLPROF_TRACE=0 COLLPROF_LIBDIR=$FAKE "$CP" --trace ./prog >out 2>&1
is "$(val COLLPROF_TRACE)" 1 "an option overrides the variable"
run ./prog -o x --no-trace -- y
is "$(grep ^ARG= out | tr '\n' ' ')" "ARG=-o ARG=x ARG=--no-trace ARG=-- ARG=y " \
  "options after the program are the program's"

# LD_PRELOAD: the user's is kept, ours prepended, never twice.
rm -f started; LD_PRELOAD=$USERLIB COLLPROF_LIBDIR=$FAKE "$CP" --no-mpi ./prog >out 2>err
is "$(val LD_PRELOAD)" "$FAKE/libcollprof.so:$USERLIB" "LD_PRELOAD kept, libcollprof.so prepended"
rm -f started; LD_PRELOAD="$FAKE/libcollprof.so $USERLIB" COLLPROF_LIBDIR=$FAKE "$CP" --no-mpi ./prog >out 2>err
is "$(val LD_PRELOAD)" "$FAKE/libcollprof.so $USERLIB" "LD_PRELOAD already naming ours: unchanged"
run ./prog
is "$(val LD_PRELOAD)" "$FAKE/libcollprof.so" "no LD_PRELOAD before: just ours"

# MPI or not.
run --mpi ./prog
is "$(val LD_PRELOAD)" "$FAKE/libcollprof-mpi.so" "--mpi preloads libcollprof-mpi.so"
rm -f started; OMPI_COMM_WORLD_SIZE=2 COLLPROF_LIBDIR=$FAKE "$CP" ./prog >out 2>err
is "$(val LD_PRELOAD)" "$FAKE/libcollprof-mpi.so" "under mpirun (OMPI_COMM_WORLD_SIZE): MPI layer"
rm -f started; PMIX_RANK=0 COLLPROF_LIBDIR=$FAKE "$CP" --no-mpi ./prog >out 2>err
is "$(val LD_PRELOAD)" "$FAKE/libcollprof.so" "--no-mpi wins over the launcher variables"
rm -f started; COLLPROF_MPI=1 COLLPROF_LIBDIR=$FAKE "$CP" ./prog >out 2>err
is "$(val LD_PRELOAD)" "$FAKE/libcollprof-mpi.so" "COLLPROF_MPI=1"
printf '#include <stdio.h>\n#include <stdlib.h>\nint main(void){const char*p=getenv("LD_PRELOAD");printf("LD_PRELOAD=%%s\\n",p?p:"");return 0;}\n' >plain.c
gcc plain.c -o plain
printf '#include <mpi.h>\n#include <stdio.h>\n#include <stdlib.h>\nint main(void){int f;MPI_Initialized(&f);const char*p=getenv("LD_PRELOAD");printf("LD_PRELOAD=%%s\\n",p?p:"");return f;}\n' >withmpi.c
if mpicc withmpi.c -o withmpi 2>err; then
  run ./withmpi
  is "$(val LD_PRELOAD)" "$FAKE/libcollprof-mpi.so" "a program linking libmpi is detected (DT_NEEDED)"
else
  skip "mpicc failed: $(head -n 1 err)"
fi
run ./plain
is "$(val LD_PRELOAD)" "$FAKE/libcollprof.so" "a program without libmpi gets the plugin only"
rm -f fake2/libcollprof-mpi.so; mkdir -p fake2; cp fake/libcollprof.so fake2/
rm -f started; COLLPROF_LIBDIR=$T/fake2 "$CP" --mpi ./prog >out 2>err
is "$(val LD_PRELOAD)" "$(cd fake2 && pwd -P)/libcollprof.so" "MPI layer missing: plugin only, with a warning"
ok "... the warning names the missing library" grep -q "libcollprof-mpi.so missing" err

# Bad options: exit 2, usage on stderr, the program not started.
bad() { # name, args...
  local name=$1; shift
  run "$@" ./prog
  local rc; rc=$(cat rc)
  if [ "$rc" = 2 ] && [ ! -e started ] && grep -q '^Usage: collprof' err; then
    _tap_report 0 "bad: $name"
  else
    _tap_report 1 "bad: $name"; echo "# rc=$rc started=$([ -e started ] && echo yes || echo no)"; sed 's/^/# /' err | head -n 3
  fi
}
bad "unknown option" --bogus
bad "unknown short option" -x
bad "unknown event name" -e Coll,Foo
bad "empty event item" -e Coll,,P2p
bad "event number too large" -e 0x100000000
bad "negative gpu-sample" --gpu-sample -1
bad "gpu-sample not a number" --gpu-sample x
bad "host-sample not a number or auto" --host-sample often
bad "seed not a number" --seed lucky
bad "seed over 64 bits" --seed 18446744073709551616
bad "seed negative" --seed -1
bad "seed empty hex" --seed 0x
bad "periods without duration" --periods 1
bad "periods not numbers" --periods a:b
bad "periods zero duration" --periods 1:0
bad "periods bad repeat" --periods 1:2:x
bad "rank-logs reversed range" --rank-logs 3-1
bad "rank-logs word" --rank-logs some
bad "empty output" -o ''
run --gpu-sample
is "$(cat rc)" 2 "bad: missing value exits 2"
run -q
is "$(cat rc)" 2 "bad: no program exits 2"

# The program cannot be run.
run ./no-such-program
is "$(cat rc)" 127 "program not found: 127"
ok "... with a message" grep -q "no-such-program: command not found" err
run no-such-program-in-path
is "$(cat rc)" 127 "not found in PATH: 127"
echo "not executable" >noexec
run ./noexec
is "$(cat rc)" 126 "not executable: 126"
rm -f started; (cd /tmp && COLLPROF_LIBDIR=$FAKE PATH="$T:$PATH" "$CP" prog >"$T/out" 2>"$T/err")
ok "program found through PATH" test -e started

# --collate with the stand-in libraries: the program as a child, its status
# and signals, the rules (needs -o, not under MPI)
run --collate --no-mpi -q -- ./prog
is "$(cat rc)" 2 "--collate without -o: exits 2"
ok "... not started, with a message" bash -c '! test -e started && grep -q -- "--collate needs the output folder" err'
run --collate --no-mpi -q -o "$T/cl0" -- sh -c 'exit 3'
is "$(cat rc)" 3 "--collate: the program's exit status"
ok "... and one line: nothing to collate" grep -q "cl0 was not made: no process of the run profiled NCCL" err
run --collate --mpi -q -o "$T/cl1" -- ./prog
ok "--collate under MPI: ignored, said, the program runs" bash -c \
  'test -e started && grep -q -- "--collate is for runs without MPI" err'
COLLPROF_COLLATE=1 COLLPROF_LIBDIR=$FAKE "$CP" --no-mpi -q -o "$T/cl2" -- sleep 30 >out 2>err &
L=$!
sleep 0.5
kill -TERM $L
wait $L
is "$?" 143 "COLLPROF_COLLATE=1: SIGTERM to the launcher ends the program, status 128+15"
ok "... the program is gone" bash -c '! pgrep -f "^sleep 30\$" >/dev/null'
# SIGINT sent to the launcher alone (kill, not a terminal) goes on too.  A
# background job of a script starts with SIGINT ignored, so the program
# sets it back to the default itself.
COLLPROF_LIBDIR=$FAKE "$CP" --collate --no-mpi -q -o "$T/cl6" -- python3 -c \
  'import signal, time; signal.signal(signal.SIGINT, signal.SIG_DFL); open("int-ready", "w").close(); time.sleep(30)' \
  >out 2>err &
L=$!
for _ in $(seq 100); do test -e int-ready && break; sleep 0.1; done
kill -INT $L
wait $L
is "$?" 130 "--collate: SIGINT sent to the launcher alone ends the program, status 128+2"
(trap '' CHLD; COLLPROF_LIBDIR=$FAKE exec "$CP" --collate --no-mpi -q -o "$T/cl5" -- sh -c 'exit 5') >out 2>err
is "$?" 5 "--collate started with SIGCHLD ignored: still the program's status"
rm -f started; WORLD_SIZE=4 COLLPROF_LIBDIR=$FAKE "$CP" --collate --no-mpi -q -o "$T/cl4" -- ./prog >out 2>err
ok "--collate in one of several tasks (WORLD_SIZE=4): ignored, said, the program runs" bash -c \
  'test -e started && grep -q -- "--collate: this is one task of several (WORLD_SIZE)" err'
rm -f started; FLUX_JOB_SIZE=2 COLLPROF_LIBDIR=$FAKE "$CP" --collate --no-mpi -q -o "$T/cl6" -- ./prog >out 2>err
ok "--collate in a task of a Flux job of 2 (FLUX_JOB_SIZE): ignored, said, the program runs" bash -c \
  'test -e started && grep -q -- "--collate: this is one task of several (FLUX_JOB_SIZE)" err'
rm -f started; FLUX_JOB_SIZE=1 JSM_NAMESPACE_SIZE=1 COLLPROF_LIBDIR=$FAKE "$CP" --collate --no-mpi -q -o "$T/cl7" -- ./prog >out 2>err
ok "--collate in a job of one task (FLUX_JOB_SIZE=1, JSM_NAMESPACE_SIZE=1): not refused" bash -c \
  'test -e started && ! grep -q -- "one task of several" err'
run --collate --no-mpi -q -o "$T/cl3" -- ./no-such-program
is "$(cat rc)" 127 "--collate: program not found, 127"

# The real build: libraries found next to the launcher.
if [ -n "${SAN:-}" ]; then
  skip "sanitized libcollprof.so cannot be preloaded into an uninstrumented program"
elif [ -e "$LIB/libcollprof.so" ]; then
  rm -f started; "$CP" -q --no-mpi -o "$T/real" -- ./plain >out 2>err
  is "$(val LD_PRELOAD)" "$(readlink -f "$LIB/libcollprof.so")" "libraries found in <bindir>/../lib"
else
  skip "no $LIB/libcollprof.so"
fi

# --collate on a real run without MPI: two replays under one shell, then
# the summary, report and size table in the folder, and no file from the
# collation itself
if [ -n "${SAN:-}" ]; then
  skip "sanitized libcollprof.so cannot be preloaded into an uninstrumented program"
elif [ -x "$BIN/collprof-replay" ] && [ -x "$BIN/collprof-collate" ] && [ -e "$FIX/ag4_net/p1.jsonl" ]; then
  "$CP" --collate -o "$T/coll" -- sh -c 'for f in "$@"; do "$0" --no-mpi --plugin "$NCCL_PROFILER_PLUGIN" "$f" & done; wait' \
    "$BIN/collprof-replay" "$FIX/ag4_net/p0.jsonl" "$FIX/ag4_net/p1.jsonl" >out 2>err
  is "$?" 0 "--collate, real run: exit 0"
  ok "... summary of 2 ranks, report.html, sizes.txt, 2 rank files" bash -c \
    'grep -q "Ranks: *2 " coll/summary.log && test -s coll/report.html && grep -q "^ID " coll/sizes.txt &&
     [ $(ls coll/*.jsonl | wc -l) = 2 ]' 
  ok "... the launcher said where the report is" grep -q "report in $T/coll/report.html" err
else
  skip "no collprof-replay, collprof-collate or fixtures"
fi
done_testing
