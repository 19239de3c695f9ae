#!/bin/bash
# ablate.sh — where collprof's time per event goes: `make bench` (T=1) on
# measuring-only variants of the plugin, each with one piece taken out,
# alternated over rounds so drift hits each alike.  A variant is a copy of
# the source tree with one textual patch (below) that no real build has;
# none of them is correct, they only answer "how much does this piece cost
# on this machine".
#   test/bench/ablate.sh [ROUNDS [VARIANT...]]     (default 3 rounds, all)
#   test/bench/ablate.sh --check    only apply every patch to a copy (no
#                                   build, no run): exit 1 if one no longer
#                                   applies (test/bench.t runs this)
#   test/bench/ablate.sh --parse    read a bench table on stdin, print the
#                                   own ns it would take from it (bench.t)
# Variants:
#   head        the tree as it is
#   no-clock    start and stop read no clock (a counter instead)
#   no-states   recordEventState returns at once (except KernelCh's GPU stop)
#   no-lock     the pool lock is a no-op (locked pools; a lane's owner takes
#               none since src/pool_owner.h; single-thread bench only)
#   writer-idle records are written into the ring but never published:
#               the writer thread has nothing to do
#   no-format   the writer takes the records but formats and writes nothing
# Prints own ns per event (collprof minus the do-nothing plugin) for the
# bench's three collprof rows at T=1: trace on (default ring), trace on
# (ring holds run), trace off; and how two threads scale against one
# ("vs T=1") with the trace on and off.  On a 2-core machine the writer
# thread shares the cores with two producers: writer-idle and no-format
# give the scaling a writer doing less (or nothing) would allow.  Needs
# python3; builds in $TMPDIR.
set -u
# every call timed, as the figures quoted from this script were measured
# (collprof's default, COLLPROF_HOST_SAMPLE=auto, would time 1 in 64 here)
export COLLPROF_HOST_SAMPLE=${COLLPROF_HOST_SAMPLE:-1}
# own_ns: a bench table on stdin -> the own ns of its three collprof rows
# at T=1 ("trace on" "ring holds run" "trace off"), then the T=2 rows'
# "vs T=1" of trace on and trace off ("-" where the table has no T=2).  A
# row is the configuration name (spaces inside), T, ns/event, own ns,
# Mevents/s, vs T=1, ...: the name is cut off and the fields counted from
# there, never from the end (the table gains columns).
own_ns() {
  awk '
    { row = $0; name = "" }
    sub(/^collprof, trace on +/, "", row)        { name = "on" }
    sub(/^trace on, ring holds run +/, "", row)  { name = "rh" }
    sub(/^collprof, trace off +/, "", row)       { name = "off" }
    name != "" { split(row, f, " +"); if (f[1] == 1) v[name] = f[3]; if (f[1] == 2) x[name] = f[5] }
    END { printf "%s %s %s %s %s\n", v["on"], v["rh"], v["off"],
                 (x["on"] != "" ? x["on"] : "-"), (x["off"] != "" ? x["off"] : "-") }'
}
if [ "${1:-}" = --parse ]; then own_ns; exit; fi
TOP=$(cd "$(dirname "$0")/../.." && pwd)
CHECK=0
[ "${1:-}" = --check ] && { CHECK=1; shift; }
ROUNDS=${1:-3}
shift 2>/dev/null
VARIANTS=("$@")
[ ${#VARIANTS[@]} -gt 0 ] || VARIANTS=(head no-clock no-states no-lock writer-idle no-format)
W=$(mktemp -d "${TMPDIR:-/tmp}/collprof-ablate.XXXXXX")
BENCH=$W/bench/bin/collprof-bench

patch_for() {   # the python patch of variant $1 (run in the copy's root)
  case $1 in
    head) echo "pass" ;;
    no-clock) cat <<'PY'
a = '''  const int trace = atomic_load_explicit(&cp_hot.trace_on, memory_order_relaxed);
  const uint64_t now = ev_now();
  CP_PH(CP_PH_S_CLOCK, 0);'''
b = '''  const int trace = !scratch && atomic_load_explicit(&cp_hot.trace_on, memory_order_relaxed);
  const uint64_t now = ev_now();
  if (!scratch) CP_PH(CP_PH_T_CLOCK, 0);'''
for p, x, name in (('src/event_start.c', a, 'fake_a'), ('src/event_stop.c', b, 'fake_b')):
    s = open(p).read()
    assert x in s
    s = s.replace(x, x.replace('const uint64_t now = ev_now();',
                               'static __thread uint64_t %s; const uint64_t now = (%s += 100);' % (name, name)))
    open(p, 'w').write(s)
PY
    ;;
    no-states) cat <<'PY'
p = 'src/event_state.c'; s = open(p).read()
a = '''ncclResult_t cp_core_state(void *eHandle, int eState, const ncclProfilerEventStateArgs_v5_t *a) {
'''
assert a in s
s = s.replace(a, a + '  if (eState != ncclProfilerKernelChStop) return NCCL_OK;\n')
open(p, 'w').write(s)
PY
    ;;
    no-lock) cat <<'PY'
p = 'src/pool.h'; s = open(p).read()
a = '''static inline void cp_pool_lock(cp_pool *p) { cp_spin_lock(&p->lock); }'''
b = '''static inline void cp_pool_unlock(cp_pool *p) { cp_spin_unlock(&p->lock); }'''
assert a in s and b in s
s = s.replace(a, 'static inline void cp_pool_lock(cp_pool *p) { (void)p; }')
s = s.replace(b, 'static inline void cp_pool_unlock(cp_pool *p) { (void)p; }')
open(p, 'w').write(s)
PY
    ;;
    writer-idle) cat <<'PY'
p = 'src/trace_ring.h'; s = open(p).read()
a = '''  rg->head_priv = h;
  atomic_store_explicit(&rg->head, h, memory_order_release);'''
assert a in s
s = s.replace(a, '''  rg->head_priv = h;
  rg->tail_cache = h - 1;''')
open(p, 'w').write(s)
PY
    ;;
    no-format) cat <<'PY'
p = 'src/trace_writer.c'; s = open(p).read()
import re
a = re.search(r"      if \(kind == CP_REC_STATE_C\) \{.*?\n      nrec\+\+;", s, re.S)
assert a
s = s[:a.start()] + '''      t += kind == CP_REC_STATE_C ? 1 : kind == CP_REC_EVENT_C ? 2 : 4;
      nrec++;''' + s[a.end():]
open(p, 'w').write(s)
PY
    ;;
    *) return 1 ;;
  esac
}

# The bench driver itself, once, from the tree as it is.
if [ $CHECK = 0 ]; then
  make -C "$TOP" -s BUILD="$W/bench" "$BENCH" >"$W/bench.log" 2>&1 ||
    { echo "ablate.sh: cannot build the bench (see $W/bench.log)"; exit 1; }
fi
ok=()
stale=0
for v in "${VARIANTS[@]}"; do
  py=$(patch_for "$v") || { echo "ablate.sh: unknown variant $v"; stale=1; continue; }
  mkdir -p "$W/src_$v"
  cp -r "$TOP/src" "$TOP/include" "$TOP/collate" "$TOP/test" "$TOP/Makefile" "$W/src_$v/"
  rm -rf "$W/src_$v/test/gpu"
  if ! (cd "$W/src_$v" && python3 -c "$py") 2>"$W/$v.patch.log"; then
    echo "ablate.sh: variant $v: its patch no longer applies to this tree (skipped)"
    stale=1
    continue
  fi
  if [ $CHECK = 1 ]; then
    echo "ablate.sh: variant $v: patch applies"
    continue
  fi
  if ! make -C "$W/src_$v" -s BUILD="$W/b_$v" "$W/b_$v/lib/libcollprof.so" \
       "$W/b_$v/lib/libnccl-profiler-noop.so" >"$W/$v.build.log" 2>&1; then
    echo "ablate.sh: variant $v does not build (see $W/$v.build.log)"
    continue
  fi
  ok+=("$v")
done
if [ $CHECK = 1 ]; then rm -rf "$W"; exit $stale; fi
[ ${#ok[@]} -gt 0 ] || exit 1
printf '%-12s %5s %16s %16s %10s %9s %9s\n' variant round "trace on" "ring holds run" "trace off" \
  "on T2/T1" "off T2/T1"
for r in $(seq 1 "$ROUNDS"); do
  for v in "${ok[@]}"; do
    COLLPROF_BUILD=$W/b_$v "$BENCH" --reps 5 --threads 1,2 2>/dev/null |
      own_ns | { read -r on rh off on2 off2
                 printf '%-12s %5d %16s %16s %10s %9s %9s\n' "$v" "$r" "$on" "$rh" "$off" "$on2" "$off2"; }
  done
done
echo "(own ns per event at T=1, and 2 threads' events per second over 1 thread's; builds in $W)"
