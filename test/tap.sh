# tap.sh — tiny TAP helpers for the shell tests (sourced by test/*.t).
#
#   . "$(dirname "$0")/tap.sh"
#   plan 3; ok "build exists" test -x "$BIN/collprof-replay"; is "$a" "$b" "name"; like "$s" "re" "name"
#
# Sets B (build folder, from COLLPROF_BUILD or ./build), LIB, BIN, FIX (the
# shared fixtures next to the checkout, else the copies bundled in
# share/fixtures), and a private scratch folder T removed at exit.
set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
B=${COLLPROF_BUILD:-$TOP/build}
LIB=$B/lib
BIN=$B/bin
FIX=${COLLPROF_FIXTURES:-$TOP/../shared/fixtures/nccl-2.28.9}
[ -d "$FIX" ] || FIX=$TOP/share/fixtures
T=$(mktemp -d "${TMPDIR:-/tmp}/collprof-test.XXXXXX")
trap 'rm -rf "$T"' EXIT
_tap_n=0
_tap_fail=0
plan() { echo "1..$1"; }
skip_all() { echo "1..0 # SKIP $*"; exit 0; }
# COLLPROF_FAIL_LOG (make check sets it): each failure and its first
# diagnostic lines are also appended there, since prove shows neither.
_tap_faillog() { [ -n "${COLLPROF_FAIL_LOG:-}" ] && cut -c 1-300 >>"$COLLPROF_FAIL_LOG" 2>/dev/null; return 0; }
_tap_report() { # status name
  _tap_n=$((_tap_n + 1))
  if [ "$1" -eq 0 ]; then echo "ok $_tap_n - $2"; else
    echo "not ok $_tap_n - $2"; _tap_fail=$((_tap_fail + 1))
    echo "$(basename "$0") $_tap_n: $2" | _tap_faillog
  fi
}
ok() {
  local name=$1; shift; "$@" >"$T/.out" 2>&1; local rc=$?; _tap_report $rc "$name"
  if [ $rc -ne 0 ]; then sed 's/^/# /' "$T/.out" | head -n 30; sed 's/^/    /' "$T/.out" | head -n 8 | _tap_faillog; fi
  return 0
}
is() {
  if [ "$1" == "$2" ]; then _tap_report 0 "$3"; else
    _tap_report 1 "$3"; echo "#   got:      '$1'"; echo "#   expected: '$2'"
    printf '    got:      %s\n    expected: %s\n' "${1:0:200}" "${2:0:200}" | _tap_faillog
  fi
}
# like STRING REGEX NAME: ok when STRING matches the extended regex.
like() {
  if [[ $1 =~ $2 ]]; then _tap_report 0 "$3"; else
    _tap_report 1 "$3"; echo "#   got: '$1'"
    printf '    got:      %s\n    pattern:  %s\n' "${1:0:200}" "${2:0:200}" | _tap_faillog
  fi
}
skip() { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n # SKIP $*"; }
diag() { echo "# $*"; }
# One TAP result per "ok - NAME" / "FAIL - NAME" line a checker script
# wrote to FILE; its other lines become comments.
tap_from_checker() {
  local line
  while IFS= read -r line; do
    case $line in
      "ok - "*) _tap_report 0 "${line#ok - }" ;;
      "FAIL - "*) _tap_report 1 "${line#FAIL - }" ;;
      *) echo "# $line" ;;
    esac
  done <"$1"
}
done_testing() { echo "1..$_tap_n"; exit 0; }
# mpirun with the flags a root user on a small machine needs.
MPIRUN=(mpirun --oversubscribe --bind-to none --mca btl self,vader --mca btl_vader_single_copy_mechanism none)
[ "$(id -u)" -eq 0 ] && MPIRUN+=(--allow-run-as-root)
export OMPI_MCA_rmaps_base_oversubscribe=1
# Tests that replay the captures and collate offline: the tools and the
# fixtures, else skip the whole test (sets REPLAY, PLUGIN, COLLATE).
need_replay_collate() {
  REPLAY=$BIN/collprof-replay
  PLUGIN=$LIB/libcollprof.so
  COLLATE=$BIN/collprof-collate
  [ -x "$REPLAY" ] && [ -e "$PLUGIN" ] && [ -x "$COLLATE" ] || skip_all "collprof-replay, collprof-collate or libcollprof.so not built"
  command -v python3 >/dev/null || skip_all "no python3"
  ls "$FIX"/ar_nvlink/p0.jsonl >/dev/null 2>&1 || skip_all "no fixtures in $FIX"
}
# Tests of the MPI collation (mpi_collate.t, mpi_sanitized.t): the MPI
# layer, the replay and the collation tool built, mpirun, python3 and the
# captures, else skip the whole test (sets MPILIB, REPLAY, COLLATE, CHK);
# a clean environment, every event type on every call.
need_mpi_collate() {
  MPILIB=$LIB/libcollprof-mpi.so
  REPLAY=$BIN/collprof-replay
  COLLATE=$BIN/collprof-collate
  local f
  for f in "$MPILIB" "$REPLAY" "$COLLATE"; do [ -e "$f" ] || skip_all "no $f (make${SAN:+ SAN=$SAN} first)"; done
  command -v mpirun >/dev/null || skip_all "no mpirun"
  command -v python3 >/dev/null || skip_all "no python3"
  ls "$FIX"/ag4_net/p*.jsonl >/dev/null 2>&1 || skip_all "no fixtures in $FIX"
  unset NCCL_PROFILER_PLUGIN COLLPROF_PERIODS COLLPROF_TRACE COLLPROF_POOL_SIZE COLLPROF_HASH_BITS COLLPROF_RANK_LOGS
  export COLLPROF_QUIET=1 COLLPROF_GPU_SAMPLE=1 NCCL_PROFILE_EVENT_MASK=4095
  CHK=(python3 "$TOP/test/mpi_collate_check.py")
}
# mpirun_case NAME NP ENV... -- PROGRAM ARGS...: one mpirun into $T/NAME
# (its output in $T/NAME.out) with need_mpi_collate's environment and ENV
# (NAME=VALUE, or NAME for its value here), LD_PRELOAD=$PRELOAD (default
# $MPILIB), at most $MPI_TIMEOUT seconds (120); one check: it exits 0.
mpirun_case() {
  local name=$1 np=$2; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=(-x "$1"); shift; done
  shift
  rm -rf "$T/$name"
  COLLPROF_OUTPUT_DIR=$T/$name timeout "${MPI_TIMEOUT:-120}" "${MPIRUN[@]}" -np "$np" -x COLLPROF_OUTPUT_DIR \
    -x COLLPROF_QUIET -x COLLPROF_GPU_SAMPLE -x NCCL_PROFILE_EVENT_MASK "${envs[@]}" \
    -x LD_PRELOAD="${PRELOAD:-$MPILIB}" "$@" >"$T/$name.out" 2>&1
  local rc=$?
  is "$rc" 0 "$name: mpirun exits 0${SAN:+ under SAN=$SAN}"
  [ $rc -eq 0 ] || sed 's/^/#   /' "$T/$name.out" | tail -n 15
}
# Whether a test may run "${MPIRUN[@]}" with LIB preloaded: not under a
# sanitizer (a sanitized library preloaded into mpirun's children), and
# with mpirun and LIB there; else one skip and status 1.
mpi_preload_ok() {
  if [ -n "${SAN:-}" ]; then skip "mpirun with a preloaded library is not run under sanitizers"; return 1; fi
  if ! command -v mpirun >/dev/null || [ ! -e "$1" ]; then skip "no mpirun or $(basename "$1")"; return 1; fi
}
# Every API call timed and traced unless a test asks otherwise: a replay
# issues NCCL's calls microseconds apart, so host sampling's default (auto,
# src/host_sample.h) would time one in 64, and the tests compare traces
# and times with every callback.  host_sample.t tests the sampling itself.
export COLLPROF_HOST_SAMPLE=${COLLPROF_HOST_SAMPLE:-1}
# GPU sampling exactly one call in N (COLLPROF_GPU_SAMPLE_US=0, the
# default), also where the environment asks for spacing: the tests hold
# the sampled calls to the rule's exact list (gpu_sampling.t), and spacing
# at a replay's pace would sample far fewer; test_mask_control tests it.
export COLLPROF_GPU_SAMPLE_US=0
# No start delay for GPU sampling (src/start_delay.c, "Start delay"): a
# replay issues its calls within milliseconds, all inside the default's
# 100 ms, and the tests hold the sampled calls to the rule; gpu_sampling.t
# replays with the default to test the delay itself.
export COLLPROF_GPU_SAMPLE_DELAY_MS=${COLLPROF_GPU_SAMPLE_DELAY_MS:-0}
# No cost windows (src/cost_sample.c) unless a test asks: they open at
# random times, so whether a short replay saw one (and which overhead line
# its summary prints) would change from run to run; cost_sample.t tests
# them.
export COLLPROF_COST_SAMPLE_MS=${COLLPROF_COST_SAMPLE_MS:-0}
