#!/bin/bash
# timed_wrapper.t — the diagnostic wrapper plugin (test/gpu/timed_plugin.c)
# on a CPU, driven by collprof-bench's NCCL-shaped calls with NCCL's proxy
# thread (KernelCh, ProxyCtrl): it forwards every callback to the plugin it
# wraps and reports each thread's callbacks; TIMED_SKIP_KC=1 keeps the
# KernelCh from that plugin (what splits collprof's cost on a GPU host
# between the proxy thread and the rest: share/doc/performance.md), and
# TIMED_NOTIME=1 makes it a plain forwarder.  Then test/gpu/ab.sh's
# configurations that use it (AB_PRINT_ENV=1: the mpirun arguments alone).
. "$(dirname "$0")/tap.sh"
[ -z "${SAN:-}" ] || skip_all "not under SAN=$SAN (the bench dlopens the plugins)"
W=$LIB/libnccl-profiler-timed.so
[ -e "$W" ] && [ -x "$BIN/collprof-bench" ] || skip_all "no $W or collprof-bench (make all)"

CALLS=400
# run NAME ENV...: the bench's proxy mode (2 channels), every event type on
# every call, collprof inside the wrapper; stderr and the trace kept
run() {
  local name=$1; shift
  mkdir -p "$T/$name"
  (cd "$T/$name" && env "$@" TIMED_INNER="$LIB/libcollprof.so" COLLPROF_BENCH_PROXY=1 NCCL_PROFILE_EVENT_MASK=4095 \
     COLLPROF_GPU_SAMPLE=1 COLLPROF_GPU_SAMPLE_DELAY_MS=0 COLLPROF_HOST_SAMPLE=1 COLLPROF_TRACE_BUFFER=65536 \
     COLLPROF_OUTPUT_DIR="$T/$name/out" "$BIN/collprof-bench" --child "$W" 1 $CALLS >"$T/$name/res" 2>"$T/$name/err")
}
# records NAME TYPE: trace records of that event type
records() { cat "$T/$1"/out/*.jsonl 2>/dev/null | grep -c "\"type\":\"ncclProfile$2\""; }
# wrapped NAME TYPE: the inner plugin's starts of TYPE the wrapper reported
# (every thread's "timed:" line: "... TYPE N (mean, max ns) ...")
wrapped() {
  grep '^timed: ' "$T/$1/err" | grep -o " $2 [0-9]* " | awk '{s += $2} END {print s + 0}'
}

run plain X=1
ok "forwarding: the bench ran" grep -q '^RESULT ' "$T/plain/res"
kc=$(records plain KernelCh)
ok "forwarding: collprof traced every KernelCh ($kc records)" test "$kc" -ge $((2 * CALLS))
ok "forwarding: collprof traced the Colls too ($(records plain Coll))" test "$(records plain Coll)" -ge "$CALLS"
ok "forwarding: one timed: line per calling thread (the bench's and the proxy thread)" \
  test "$(grep -c '^timed: pid ' "$T/plain/err")" -eq 2
ok "forwarding: the wrapper counted the KernelCh starts it passed on ($(wrapped plain KernelCh))" \
  test "$(wrapped plain KernelCh)" -ge $((2 * CALLS))

run skip TIMED_SKIP_KC=1
ok "TIMED_SKIP_KC=1: the bench ran" grep -q '^RESULT ' "$T/skip/res"
is "$(records skip KernelCh)" 0 "TIMED_SKIP_KC=1: collprof saw no KernelCh"
ok "TIMED_SKIP_KC=1: collprof still traced the Colls ($(records skip Coll))" test "$(records skip Coll)" -ge "$CALLS"
ok "TIMED_SKIP_KC=1: ...and the proxy thread's ProxyCtrl ($(records skip ProxyCtrl))" test "$(records skip ProxyCtrl)" -gt 0
ok "TIMED_SKIP_KC=1: the wrapper still lists the KernelCh it kept ($(wrapped skip KernelCh))" \
  test "$(wrapped skip KernelCh)" -ge $((2 * CALLS))
ok "TIMED_SKIP_KC=1: no collprof warning about a foreign handle" sh -c "! grep -q '^collprof:.*handle' '$T/skip/err'"

run notime TIMED_NOTIME=1
ok "TIMED_NOTIME=1: the bench ran" grep -q '^RESULT ' "$T/notime/res"
is "$(grep -c '^timed: ' "$T/notime/err")" 0 "TIMED_NOTIME=1: no report"
is "$(records notime KernelCh)" "$kc" "TIMED_NOTIME=1: collprof traced as many KernelCh as with timing"

run both TIMED_NOTIME=1 TIMED_SKIP_KC=1
is "$(records both KernelCh)" 0 "TIMED_NOTIME=1 TIMED_SKIP_KC=1: no KernelCh reached collprof"
ok "TIMED_NOTIME=1 TIMED_SKIP_KC=1: the Colls did ($(records both Coll))" test "$(records both Coll)" -ge "$CALLS"

# ab.sh's wrapped configurations: the inner plugin's, with the wrapper named
# NCCL's plugin and the inner one TIMED_INNER
AB="$TOP/test/gpu/ab.sh"
args=$(COLLPROF_BUILD=$B AB_PRINT_ENV=1 CONFIGS="wrap-collprof-all-nokc timed-noop-all wrap-collprof@$B" bash "$AB" 2>&1)
echo "$args" | sed 's/^/# /'
line() { echo "$args" | grep "^$1: "; }
ok "ab.sh wrap-collprof-all-nokc: the wrapper is NCCL's plugin, collprof inside it" \
  sh -c "echo '$(line wrap-collprof-all-nokc)' | grep -q 'NCCL_PROFILER_PLUGIN=$W -x TIMED_INNER=$LIB/libcollprof.so '"
ok "ab.sh wrap-collprof-all-nokc: every event, a plain forwarder keeping KernelCh" \
  sh -c "echo '$(line wrap-collprof-all-nokc)' | grep -q 'NCCL_PROFILE_EVENT_MASK=4095 -x COLLPROF_GPU_SAMPLE=1 -x TIMED_NOTIME=1 -x TIMED_SKIP_KC=1'"
ok "ab.sh timed-noop-all: the do-nothing plugin inside, timing on" \
  sh -c "echo '$(line timed-noop-all)' | grep -q 'TIMED_INNER=$LIB/libnccl-profiler-noop.so -x NCCL_PROFILE_EVENT_MASK=4095' && ! echo '$(line timed-noop-all)' | grep -q TIMED_NOTIME"
ok "ab.sh wrap-collprof@DIR: that build's collprof inside" \
  sh -c "echo '$(line "wrap-collprof@$B")' | grep -q 'TIMED_INNER=$B/lib/libcollprof.so'"
COLLPROF_BUILD=$B AB_PRINT_ENV=1 CONFIGS="wrap-bogus" bash "$AB" >/dev/null 2>&1
is "$?" 2 "ab.sh: an unknown configuration inside the wrapper is refused"
done_testing
