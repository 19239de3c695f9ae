/*
 * plugin.c — the NCCL profiler callbacks: ncclProfiler_v5 (NCCL 2.28) and
 * ncclProfiler_v4 (2.27) over one implementation.
 *
 * Hot path, per event: decode the context (registry.h) and the parent
 * handle (handle.h) by arithmetic; the path from the parent handle's path
 * id (paths.h, per-thread cache); one slot from the communicator's pool
 * under its spinlock (pool.h); at stop the numbers go into this thread's
 * profile array (profile.h) and one binary record into this thread's trace
 * ring (trace.h).  No system call, no malloc, no lock shared by threads of
 * different communicators.  Cost: the thread block is read once per
 * callback and passed down (the cache hits of paths, strings and profile
 * are inlined); one clock read at start and one at stop, none for a state
 * when the trace is off; the pool held once per start and stop, by its
 * owner without a lock (pool_owner.h; a parent in another thread's pool is
 * read without it and its update posted, a Coll's KernelCh as one post:
 * kc_batch.h), nothing for a state (one
 * lock-free read of the slot; KernelCh's GPU stop also writes two fields
 * of its own slot);
 * with the trace on, the event record is
 * built in the slot at start and copied once, at stop, straight into the
 * ring, and a state is a 32-byte record.
 *
 * Counted events (host sampling, below: most of them) take shorter ways
 * still.  A counted start whose lookup the thread's memo holds
 * (counted_memo.h) goes to start_counted_child, or through start_fast to
 * start_counted_fast, and writes no pool; a counted stop with no hook and
 * a counted state are handled in the v5 entry points from the handle's
 * bits (stop_quiet, state_quiet) while nothing that needs the full checks
 * (a finalized communicator, shutdown, capture) has happened; a counted
 * KernelLaunch the launch timer leaves alone and a counted Group get no
 * handle at all, so NCCL makes no stop callback for them
 * (counted_drop_handle).
 *
 * Two paths per callback.  Nearly every event NCCL sends is on the
 * communicator whose context (start) or pool (stop, state) this thread
 * decoded last, with a parent in the same pool: start_fast and the fast
 * entries of cp_core_stop/cp_core_state take that case with one compare
 * each (context value; handle tag and comm bits) and check a slot against
 * a handle with one more (pool.h, cp_slot_key).  Everything else (PXN,
 * other pools, bad arguments, v4) goes to start_general / stop_general /
 * state_general, which do the same work with every check; the fast paths
 * hand over before changing anything.  test_fast_path.c holds the two to
 * the same numbers.
 *
 * Finalize releases the communicator's slots (pool.h): later stops and
 * states on its handles are counted as after-finalize bad calls; children
 * elsewhere that name its handles keep their path (handle bits) and skip
 * the parent update.
 *
 * PXN: a ProxyOp from another process (proxyOp.pid != our pid) or with a
 * context we did not create is recorded in the process-wide detach pool
 * (comm index 0) under the root element "PXN"; its context and parentObj
 * are never dereferenced.  ProxyStep/NetPlugin/KernelCh with an unknown
 * context whose parent is one of our detach-pool handles follow it there.
 *
 * Robustness: every bad call (NULL pointers, foreign or stale handles,
 * double stops, calls after finalize or collprof_shutdown) returns
 * ncclSuccess, prints one "collprof:" line per kind and is counted.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "nccl_profiler_abi.h"
#include "collprof.h"
#pragma GCC visibility push(hidden)
#include "plugin.h"
#include "bump.h"
#include "affinity.h"
#include "capture.h"
#include "clock.h"
#include "config.h"
#include "oneoff.h"
#include "cost_sample.h"
#include "counted_memo.h"
#include "coll_memo.h"
#include "cuda_uuid.h"
#include "handle.h"
#include "host_sample.h"
#include "kc_batch.h"
#include "launch_timer.h"
#include "mask_control.h"
#include "output_hooks.h"
#include "paths.h"
#include "phase_timing.h"
#include "pool.h"
#include "pool_owner.h"
#include "profile.h"
#include "proxy_defer.h"
#include "registry.h"
#include "strtab.h"
#include "tls.h"
#include "trace.h"
#include "trace_ring.h"
#include "trace_writer.h"

#define CP_EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- process state (written once at first init, then read-only) ---- */
static struct {   /* pid, stopped, trace_on: in cp_hot (hot.h) */
  cp_pool *_Atomic detach;
  cp_pool *_Atomic scratch;
  _Atomic uint64_t scratch_ctx;
  uint32_t id_send, id_recv, id_init, id_fini;
  _Atomic int active_comms;
  _Atomic int nccl_version;
  _Atomic uint64_t bad_calls;
  double event_cost;
  int host_sample;   /* COLLPROF_HOST_SAMPLE (config.h) */
  uint64_t hs_target_ns;   /* COLLPROF_HOST_SAMPLE_US, auto (host_sample.h) */
} g;
static pthread_once_t first_once = PTHREAD_ONCE_INIT;

/* ---- one warning per kind ---- */
enum {
  W_NULL_EHANDLE, W_NULL_DESCR, W_BAD_TYPE, W_NULL_CTX, W_FOREIGN_CTX, W_AFTER_FINI,
  W_SHUTDOWN, W_NULL_HANDLE, W_FOREIGN_HANDLE, W_STALE_HANDLE, W_DOUBLE_STOP,
  W_STATE_STOPPED, W_KC_RESTOP, W_FINI_CTX, W_DOUBLE_FINI, W_POOL_FULL, W_INIT_ARG, W_INIT_FAIL, W_NKINDS
};
static atomic_flag warned[W_NKINDS];

__attribute__((cold, noinline)) static void bad(int kind, const char *what) {
  atomic_fetch_add_explicit(&g.bad_calls, 1, memory_order_relaxed);
  if (!atomic_flag_test_and_set(&warned[kind])) cp_warn("%s (further ones counted, not printed)", what);
}

/* A call on an event that already stopped: the first one's line names the
 * event (handle, call path, calling thread), so that the one run in which
 * it happens says where to look. */
__attribute__((cold, noinline)) static void bad_event(int kind, const char *what, uint64_t h, uint32_t path,
                                                      const cp_thr *t) {
  char line[400];
  const char *ps = path != CP_PATH_NONE ? cp_path_str(path) : "";
  snprintf(line, sizeof line, "%s (handle 0x%llx, path %s, thread %d); ignored", what, (unsigned long long)h,
           *ps ? ps : "?", t ? (int)t->tid : -1);
  bad(kind, line);
}

/* NCCL 2.28.9's proxy (profilerProxyProgress) tests a channel's work for
 * its end even when it has not yet seen its start; when the GPU wrote both
 * timestamps between the two reads, it "stops" the KernelCh through the
 * handle its sub-operation still holds from an earlier call: state 22 and
 * a stop on an event that stopped long ago, and the current call's KernelCh
 * of that channel is never started, or started and never stopped.  Seen on
 * H200 (4 ranks, Broadcast): the two calls are counted as bad calls, one
 * line says what happened, and the sample in flight is paid back
 * (mask_control.h, cp_mask_kc_lost). */
static int path_of_type(uint32_t path, uint32_t types) {
  return path != CP_PATH_NONE && cp_path_valid(path) && (cp_path_type(path) & types) != 0;
}
static int kc_path(uint32_t path) { return path_of_type(path, ncclProfileKernelCh); }
/* NCCL 2.28 keeps the CollApi and P2pApi handles a plugin gave it in
 * thread-local state (ncclProfilerApiState) and stops the one of the
 * call's kind at the end of every collective or point-to-point call,
 * testing the handle but not the mask, while it sets the handle only when
 * the call's mask asked for the event.  So each call made while NCCL is
 * asked for less (collprof paused or outside a profiling window: the mask
 * is GroupApi alone or 0) stops the last recorded call's CollApi again.
 * Seen in test/gpu/ab.sh's paused blocks on 4 H200s (a "stopEvent twice"
 * warning in every process).  It is NCCL's bookkeeping, not the
 * application's, and nothing measured depends on it: ignored, no warning,
 * no bad call (the replay tool makes these stops as NCCL does). */
static int api_restop(uint32_t path) { return path_of_type(path, ncclProfileCollApi | ncclProfileP2pApi); }
static const char kc_restop_what[] =
    "NCCL stopped a KernelCh again (NCCL 2.28 does when its proxy sees a channel's work end before its start); "
    "that channel's KernelCh of the current call is lost";

uint64_t cp_core_bad_calls(void) { return atomic_load_explicit(&g.bad_calls, memory_order_relaxed); }
int cp_core_nccl_version(void) { return atomic_load_explicit(&g.nccl_version, memory_order_relaxed); }
double cp_core_event_cost(void) { return g.event_cost; }
void cp_plugin_stop(void) { atomic_store(&cp_hot.stopped, 1); }

cp_pool *cp_core_pool_for(uint32_t idx, uint32_t lane) {
  if (idx == 0) return lane ? NULL : atomic_load_explicit(&g.detach, memory_order_acquire);
  if (idx == CP_COMM_SCRATCH) return lane ? NULL : atomic_load_explicit(&g.scratch, memory_order_acquire);
  return cp_registry_lane(idx, lane);
}

void cp_core_set_scratch(cp_pool *p, uint64_t ctx) {
  atomic_store(&g.scratch, p);
  atomic_store(&g.scratch_ctx, p ? ctx : 0);
}

/* Per-thread memo of the pool a handle named last (stop, state). */
static inline void pool_remember(cp_thr *t, cp_pool *p) {
  t->last_pidx = p->comm_index | p->lane << CP_COMM_BITS;
  t->last_pool = p;
  t->last_hkey = p->hkey;
}
static inline cp_pool *pool_lookup(cp_thr *t, uint32_t idx, uint32_t lane) {
  if (LIKELY(t->last_pool && (idx | lane << CP_COMM_BITS) == t->last_pidx)) return t->last_pool;
  cp_pool *p = cp_core_pool_for(idx, lane);
  if (p && idx != CP_COMM_SCRATCH) pool_remember(t, p);   /* the scratch pool is never cached */
  return p;
}

/* The pool of a parent handle that is not this thread's (start_general,
 * a KernelCh's stop): remembered apart from last_pool, which names this
 * thread's own pool for its stops and states.  Pools are never freed and a
 * comm index is never given again, so a remembered (index, lane) always
 * names the same pool; the scratch pool, which comes and goes, is never
 * remembered.  Why: NCCL's proxy thread looks up its KernelCh's Coll pool
 * at each start and stop in the registry (test/bench/instr_per_event.sh,
 * proxy thread: 1,442 instructions per KernelCh before, 1,418 with it). */
static inline cp_pool *remote_pool(cp_thr *t, uint32_t idx, uint32_t lane) {
  const uint32_t k = idx | lane << CP_COMM_BITS;
  if (LIKELY(t->rp_pool != NULL && k == t->rp_pidx)) return t->rp_pool;
  cp_pool *p = cp_core_pool_for(idx, lane);
  if (p && idx != CP_COMM_SCRATCH) {
    t->rp_pool = p;
    t->rp_pidx = k;
  }
  return p;
}

/* This thread's lane of communicator c (registry.h): the lane it owns, or
 * the first free one, created now (once per thread and communicator, not
 * per event); with every lane taken, or no memory, or c finalized, one it
 * shares.  Never NULL: lane 0 exists from registration. */
__attribute__((noinline)) static cp_pool *lane_of(cp_thr *t, cp_comm *c) {
  const uintptr_t me = (uintptr_t)t;
  for (uint32_t i = 0; i < CP_LANES; i++)
    if (__atomic_load_n(&c->lane_owner[i], __ATOMIC_ACQUIRE) == me) return __atomic_load_n(&c->lanes[i], __ATOMIC_ACQUIRE);
  cp_pool *p = NULL;
  cp_spin_lock(&c->lanes_lock);
  if (!__atomic_load_n(&c->finalized, __ATOMIC_ACQUIRE))
    for (uint32_t i = 0; i < CP_LANES; i++) {
      if (__atomic_load_n(&c->lane_owner[i], __ATOMIC_RELAXED)) continue;
      const cp_config *cfg = cp_config_get();
      /* lanes 0 and 1 were made at registration (registry.c) */
      cp_pool *made = __atomic_load_n(&c->lanes[i], __ATOMIC_ACQUIRE);
      p = made ? made : cp_pool_create_lane(c->index, i, cfg->pool_size, cfg->blacklist_cap);
      if (p) {
        /* its owner from now on: this thread records there without the
         * lock (pool_owner.h); a lane made before may have been seen by a
         * snapshot */
        if (made) cp_pool_claim(p, t);
        else __atomic_store_n(&p->owner, me, __ATOMIC_RELAXED);
        __atomic_store_n(&c->lanes[i], p, __ATOMIC_RELEASE);
        __atomic_store_n(&c->lane_owner[i], me, __ATOMIC_RELEASE);
      }
      break;
    }
  cp_spin_unlock(&c->lanes_lock);
  if (!p) {
    /* every lane taken: share one, which then takes the lock for all */
    p = __atomic_load_n(&c->lanes[(me >> 6) % CP_LANES], __ATOMIC_ACQUIRE);
    if (!p) p = c->lanes[0];
    if (cp_pool_owner(p) != me) cp_pool_share(p);
  }
  return p;
}

/* Per-thread memo of the last context decoded, with this thread's lane
 * of it (also remembered as the pool its stops and states will name). */
static inline cp_comm *ctx_lookup(cp_thr *t, uint64_t v) {
  if (LIKELY(v && v == t->last_ctx)) return t->last_comm;
  cp_comm *c = cp_registry_from_ctx(v);
  if (c) {
    t->last_lpool = lane_of(t, c);
    pool_remember(t, t->last_lpool);
    t->last_ctx = v;
    t->last_comm = c;
  }
  return c;
}
/* A handle of pool p with these fields (p->hkey: tag, comm, lane). */
static inline uint64_t pool_handle(const cp_pool *p, uint32_t path, uint32_t idx, uint32_t gen) {
  return p->hkey | ((uint64_t)(path & 0xFFFFu) << 44) | ((uint64_t)(idx & CP_LOCAL_MASK) << 8) | (gen & 0xFFu);
}
/* A counted event's handle (host sampling: generation 0, no slot) keeps
 * its NCCL type's bit index in the slot field, so that its stop finds its
 * hooks from the handle alone instead of reading its path's entry in the
 * path table (about three cache lines a callback finds cold once NCCL's
 * own work has run: test/bench/lines_per_event.sh). */
static inline uint32_t counted_slot(uint32_t type) { return (uint32_t)__builtin_ctz(type) + 1; }
/* ...and an off event's (HS_OFF, below) has this bit too. */
#define CP_OFF_SLOT 0x10u
#define CP_OFF_BIT ((uint64_t)CP_OFF_SLOT << 8)
/* ...and a counted event of an untimed call (HS_UNTIMED, below) this one,
 * so that its Coll/P2p children are told apart and recorded
 * (untimed_coll) while the commonest starts, which test the handle's low
 * bits anyway, take no extra test. */
#define CP_UNT_SLOT 0x20u
#define CP_UNT_BIT ((uint64_t)CP_UNT_SLOT << 8)
/* ...and a counted event of a lean call (mask_control.c, "Lean calls")
 * this one: its CollApi/P2pApi also count the Coll/P2p that NCCL will not
 * send (start_lean), tested where the other two are. */
#define CP_LEAN_SLOT 0x40u
#define CP_LEAN_BIT ((uint64_t)CP_LEAN_SLOT << 8)
/* ...and a counted event of a call that is not lean while lean calls
 * are on (a block's first call, one the launch timer wants) this one: its
 * Coll/P2p puts its size class in its handle (CP_ACLS_*), its proxy
 * events take it over and count by it (lean_estimate.h: those calls'
 * events are the rates the lean calls' are estimated by).  Such a call's
 * events take the long way (start_fast), where the bits are handled. */
#define CP_CLS_SLOT 0x80u
#define CP_CLS_BIT ((uint64_t)CP_CLS_SLOT << 8)
#define CP_ACLS_SLOT_SHIFT 8   /* 1 + the class, in slot bits 8-13 (0: none) */
#define CP_ACLS_SLOT_MASK (0x3Fu << CP_ACLS_SLOT_SHIFT)
#define CP_ACLS_BITS ((uint64_t)CP_ACLS_SLOT_MASK << 8)
_Static_assert(CP_GCLS + 1 <= 0x3F && (CP_ACLS_SLOT_MASK >> CP_LOCAL_BITS) == 0,
               "a class fits its bits, below the lane's");
#define CP_XSLOTS (CP_UNT_SLOT | CP_LEAN_SLOT | CP_CLS_SLOT | CP_ACLS_SLOT_MASK)
static inline uint32_t counted_type(uint64_t h) {
  const uint32_t b = (uint32_t)(h >> 8) & 0xFu;
  return b ? 1u << (b - 1) : 0;
}
/* Whether handle h names the pool cached above: tag, comm and lane bits
 * in one compare (last_hkey is 0 until a pool is cached). */
static inline int handle_in_last_pool(const cp_thr *t, uint64_t h) {
  const uint64_t k = t->last_hkey;
  return k && ((h ^ k) & CP_HKEY_MASK) == 0;
}

/* Pool p's lane was finalized.  Its own flag is read only once some
 * communicator was (cp_hot.fini_any, on the line every callback reads):
 * a counted stop or state then touches no line of its pool. */
static inline int pool_finalized(const cp_pool *p) {
  return UNLIKELY(atomic_load_explicit(&cp_hot.fini_any, memory_order_relaxed)) &&
         __atomic_load_n(&p->finalized, __ATOMIC_RELAXED);
}

/* ---- first init: process-wide set-up ---- */
static void pin_library(void) {
  /* NCCL dlcloses the plugin after its last communicator; the trace writer
   * and the exit-time output still run our code: keep it mapped. */
  Dl_info info;
  if (dladdr((void *)&pin_library, &info) && info.dli_fname) {
    void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NODELETE | RTLD_NOLOAD);
    (void)h;   /* the extra reference is never dropped, on purpose */
  }
}

static void after_fork_child(void) {
  atomic_store(&cp_hot.pid, (int)getpid());
  cp_cost_after_fork();
  cp_pool_owner_after_fork();
  cp_thr_after_fork();
  cp_registry_after_fork();
}

static void kc_span_thread_end(cp_thr *t);   /* kc_span, below */
static void first_init(void) {
  cp_clock_init();
  cp_pool_owner_init();   /* before any pool has an owner */
  __atomic_store_n(&cp_thr_exit_hook, kc_span_thread_end, __ATOMIC_RELEASE);
  pin_library();
  atomic_store(&cp_hot.pid, (int)getpid());
  pthread_atfork(NULL, NULL, after_fork_child);
  const cp_config *cfg = cp_config_get();
  g.id_send = cp_str_intern("Send");
  g.id_recv = cp_str_intern("Recv");
  g.id_init = cp_str_intern("ProfilerInit");
  g.id_fini = cp_str_intern("ProfilerFinalize");
  g.host_sample = cfg->host_sample;
  g.hs_target_ns = (uint64_t)cfg->host_sample_us * 1000;
  atomic_store(&g.detach, cp_pool_create(0, cfg->pool_size, cfg->blacklist_cap));
  int (*getver)(int *) = NULL;
  *(void **)&getver = dlsym(RTLD_DEFAULT, "ncclGetVersion");
  int v = 0;
  if (getver && getver(&v) == 0) atomic_store(&g.nccl_version, v);
  g.event_cost = cp_selfcost_measure();   /* trace still off here */
  cp_cost_start();   /* after the self-cost: its calls are not NCCL's */
  cp_capture_init();
  cp_lt_setup();
  cp_affinity_probe();
  /* With the trace off too: it registers the exit handler that writes the
   * rank file of a process that exits without finalizing every
   * communicator (many do), where the last finalize would have written it;
   * without it such a run with COLLPROF_TRACE=0 left no file at all. */
  cp_trace_start();
  atomic_store(&cp_hot.trace_on, cfg->trace_on ? 1 : 0);
  cp_defer_setup();   /* after the trace: its applier writes trace rings */
}

/* ---- helpers ---- */
static inline int valid_type(uint64_t t) { return t && !(t & (t - 1)) && t <= ncclProfileKernelLaunch; }

/* "Now" for an event: the clock, or the recorded time of a callback being
 * applied later (proxy_defer.h). */
static inline uint64_t ev_now(void) {
  const uint64_t r = cp_replay_ns;
  return LIKELY(!r) ? cp_clock_now() : r;
}

/* ---- Host sampling (COLLPROF_HOST_SAMPLE=N) ----
 * Counting an event needs its path and nothing else; timing and tracing it
 * need the clock twice, a slot, a parent link and a trace record, which is
 * where nearly all of a callback's cost goes (share/doc/performance.md,
 * "`make bench`").  With N > 1 each application thread times and traces one API
 * call in N (a random one of each block of N, so that no period of the
 * application's calls lines up with the sampling) and counts the others:
 * the whole event tree of a counted call gets no slot, no clock read and
 * no trace record, only a count (calls, bytes, size class) on its path.
 * Counts stay exact; a path's total and self time become estimates, the
 * timed events' times times calls / timed (snapshot.c), and the summary
 * says so.  The default, auto, takes each block's N from the thread's call
 * rate and gives each timed event the weight N (host_sample.h): the slot
 * type carries its log2 to the stop (slot_type).
 *
 * The decision is taken at each GroupApi start, the root of an API call on
 * its thread, and inherited: a counted event's handle has generation 0
 * (never that of a slot, handle.h) and still carries its path, so its
 * children are counted too and keep their paths; a Group (no parent)
 * follows its thread's decision.  Three kinds of call:
 *   timed    (HS_TIMED)    one in N, and the call after one that counted a
 *                          path this thread never timed (every path gets a
 *                          time early, as with GPU sampling);
 *   untimed  (HS_UNTIMED)  a call that runs with KernelCh on (GPU sampling)
 *                          but is not due for timing: counted, but for its
 *                          Coll/P2p, which are recorded (with what NCCL
 *                          starts under them: KernelCh, proxy events) since
 *                          their KernelCh need their slot, and traced, but
 *                          counted without host times, which are not those
 *                          of a typical call (a Coll of a KernelCh call
 *                          stops when its kernel ends, not when it was
 *                          enqueued: ABI doc), so the timed ones stay an
 *                          unbiased sample.  Its counted handles carry
 *                          CP_UNT_BIT, which tells their Coll/P2p children;
 *   counted  (HS_COUNTED)  the rest.
 * Threads that start no GroupApi (NCCL's proxy thread, v4) time all their
 * own events; a proxy event under a counted Coll is counted with it.
 * Known limits: a counted event cannot be told stopped twice; a launch
 * timed by the launch timer (launch_timer.h) may name a counted Coll in
 * its trace record.
 *
 * A fourth kind, off (HS_OFF), is a call made while recording is off
 * (collprof_pause, outside a COLLPROF_PERIODS window: cp_hot.off, set by
 * mask_control.c), decided at the same point and inherited the same way:
 * its events get a handle of generation 0 with CP_OFF_BIT and no path,
 * nothing is counted or recorded, and only its GroupApi reaches the mask
 * control (a graph capture or a second calling thread still freezes the
 * mask; the group's stop still closes it).  An off event is left before
 * its path is looked up, so a paused call adds no path either.
 *
 * A counted call may also be lean (mask_control.c, "Lean calls"): NCCL
 * read the lean mask for it (hs_decide sees that mask, t->lean), so it
 * sends the API events alone.  Its counted handles carry CP_LEAN_BIT; its
 * CollApi/P2pApi count the Coll/P2p too (start_lean, lean_derive).  Whether
 * the next call may be lean is this thread's answer at each GroupApi stop
 * (lean_next_ok). */
enum { HS_TIMED = 0, HS_UNTIMED = 1, HS_COUNTED = 2, HS_OFF = 3 };
/* On a recorded slot's type: counted without its host times. */
#define CP_SLOT_UNTIMED 0x8000u

static inline uint32_t hs_rand(cp_thr *t) {
  uint32_t x = t->hs_rand;
  if (UNLIKELY(!x)) x = (uint32_t)cp_thr_seed(t) | 1u;   /* xorshift32: never 0 */
  x ^= x << 13; x ^= x >> 17; x ^= x << 5;
  return t->hs_rand = x;
}

/* A path this thread counted without a time (calls == untimed): time the
 * next API calls until one of them has timed it, at most CP_HS_FORCE_CALLS
 * of them, so that every path gets a time early even where host sampling
 * would leave it none (COLLPROF_HOST_SAMPLE=0, or auto before its block
 * comes round).  The next call is not always of the asking path's kind: in
 * a loop of two kinds of call in turn it never is, and forcing only the
 * next one timed the other kind at every call while the asking path got
 * no time at all.  One path is served at a time, and a path asks only at
 * its first CP_HS_FORCE_ASKS counts: one that no call can time costs
 * nothing, one whose calls are timed elsewhere at most that many rounds.
 * The counting start only notes the path (hs_ask: two stores, no call,
 * so the counted starts keep no register across one); the next GroupApi
 * takes it up (hs_forced). */
#define CP_HS_FORCE_CALLS 8
#define CP_HS_FORCE_ASKS 4
#define CP_HS_ASKED 64   /* in hs_force: hs_ask holds a path that asked */
static inline __attribute__((always_inline)) void hs_ask(cp_thr *t, const cp_prof_ent *pe) {
  t->hs_ask = pe;
  t->hs_force |= CP_HS_ASKED;
}
/* At a GroupApi with hs_force set: whether this call is forced timed. */
static __attribute__((noinline)) int hs_forced(cp_thr *t) {
  if (t->hs_force & CP_HS_ASKED) {
    const cp_prof_ent *a = t->hs_ask;
    t->hs_force &= ~CP_HS_ASKED;
    if (!t->hs_force && cp_ld(&a->untimed) <= CP_HS_FORCE_ASKS) {
      t->hs_force_pe = a;
      t->hs_force = CP_HS_FORCE_CALLS;
    }
  }
  if (!t->hs_force) return 0;
  const cp_prof_ent *pe = t->hs_force_pe;
  if (cp_ld(&pe->calls) != cp_ld(&pe->untimed)) {   /* timed since */
    t->hs_force = 0;
    return 0;
  }
  t->hs_force--;
  return 1;
}

/* At each GroupApi start (both start paths, once per GroupApi): whether
 * this call has KernelCh on (t->sampled, mask_control.h; 2 = a first-call
 * sample) and what is recorded of it. */
static inline __attribute__((always_inline)) void hs_decide(cp_thr *t) {
  if (UNLIKELY(atomic_load_explicit(&cp_hot.off, memory_order_relaxed))) {
    t->sampled = 0;
    t->hs_mode = HS_OFF;
    return;
  }
  const uint32_t mask = cp_mask_now();   /* what NCCL read for this call */
  t->sampled = (int8_t)(mask & ncclProfileKernelCh ? 1 + cp_mask_sample_first() : 0);
  t->lean = t->hs_cls = 0;
  const int n = g.host_sample;
  if (LIKELY(n == 1)) { t->hs_mode = HS_TIMED; return; }
  int timed = 0;
  if (n != 0) {
    if (t->hs_n == 0) {   /* a new block: auto takes its size from the rate */
      if (n < 0) t->hs_lg = cp_hs_auto_lg(g.hs_target_ns, t->hs_gap);
      t->hs_blk = n < 0 ? 1u << t->hs_lg : (uint32_t)n;
      t->hs_pos = t->hs_blk > 1 ? hs_rand(t) % t->hs_blk : 0;
    }
    timed = t->hs_n == t->hs_pos;
    if (++t->hs_n >= t->hs_blk) t->hs_n = 0;
    t->hs_calls++;
  }
  /* the block's sample weighs N (host_sample.h); a forced extra one 1 */
  t->hs_wlg = (int8_t)(timed && n < 0 ? t->hs_lg : 0);
  if (UNLIKELY(t->hs_force)) timed |= hs_forced(t);
  t->hs_mode = (int8_t)(timed ? HS_TIMED : t->sampled ? HS_UNTIMED : HS_COUNTED);
  /* A lean call: NCCL sends no Coll/P2p to time (lean_next_ok asked for
   * one only where this call was not to be timed; should the mask have
   * been changed by another thread since, it is counted all the same). */
  if (UNLIKELY(cp_mask_lean_value(mask))) {
    t->lean = 1;
    t->hs_mode = HS_COUNTED;
    t->hs_wlg = 0;
    cp_inc(&t->lean_calls, 1);
  } else if (t->hs_mode == HS_COUNTED) {
    /* counted, not lean, while lean calls are on: CP_CLS_BIT */
    t->hs_cls = (int8_t)atomic_load_explicit(&cp_hot.lean_live, memory_order_relaxed);
  }
}

/* At a GroupApi stop of this thread: whether its next call may be lean,
 * i.e. will be only counted (hs_decide's block arithmetic says not timed,
 * no path waits to be timed) and the launch timer will not want its
 * KernelLaunch (no run open, its countdown not at a large call's turn).
 * A block's first call has its sample not drawn yet: not lean. */
static inline int lean_next_ok(const cp_thr *t) {
  if (LIKELY(!cp_mask_lean_on())) return 0;
  const int n = g.host_sample;
  if (n == 1 || t->hs_force) return 0;
  if (n != 0 && (t->hs_n == 0 || t->hs_n == t->hs_pos)) return 0;
  if (cp_lt_every && (t->lt_cur != 0 || (t->lt_left == 0 && t->lt_big))) return 0;
  return 1;
}

/* hs_decide, unless start_group_api made this GroupApi's decision before
 * it handed the start on (hs_predecided: one decision per call). */
static inline __attribute__((always_inline)) void hs_decide_once(cp_thr *t) {
  if (UNLIKELY(t->hs_predecided)) t->hs_predecided = 0;
  else hs_decide(t);
}

/* auto: a recorded call's GroupApi started at now; the calls since the
 * last recorded one give the rate (host_sample.h). */
static inline void hs_note_start(cp_thr *t, uint64_t now) {
  /* a span over a time recording was off (pause, outside a window) is no
   * gap between calls: start afresh from this call */
  const uint32_t ep = atomic_load_explicit(&cp_hot.off_epoch, memory_order_relaxed);
  if (UNLIKELY(ep != t->hs_epoch)) t->hs_epoch = ep;
  else if (t->hs_last_ns && now > t->hs_last_ns)
    t->hs_gap = cp_hs_gap_update(t->hs_gap, now - t->hs_last_ns, t->hs_calls);
  t->hs_last_ns = now;
  t->hs_calls = 0;
}

/* What a recorded event's slot type carries besides NCCL's type bit:
 * CP_SLOT_UNTIMED, or the log2 of a timed event's weight in bits 12-14
 * (auto; never on a KernelCh, which the proxy thread starts and whose
 * type the pool compares as is). */
#define CP_SLOT_TYPE_BITS 0x0FFFu
#define CP_SLOT_WLG_SHIFT 12
static inline uint16_t slot_type(const cp_thr *t, uint32_t type) {
  if (t->hs_mode == HS_UNTIMED) return (uint16_t)(type | CP_SLOT_UNTIMED);
  return (uint16_t)(type | (type != ncclProfileKernelCh ? (uint32_t)t->hs_wlg << CP_SLOT_WLG_SHIFT : 0));
}

/* A root event of this thread's call (GroupApi, Group) is counted, or off:
 * in every call but a timed one (an untimed call records its Coll/P2p
 * alone: untimed_coll). */
static inline int hs_counted_root(const cp_thr *t, uint32_t type) {
  return t->hs_mode != HS_TIMED && (type & (ncclProfileGroupApi | ncclProfileGroup));
}
/* The slot bits a counted root's handle carries: CP_UNT_SLOT in an
 * untimed call, CP_LEAN_SLOT in a lean one, CP_CLS_SLOT (above),
 * inherited by its counted children. */
static inline uint32_t hs_root_xslot(const cp_thr *t) {
  return t->hs_mode == HS_UNTIMED ? CP_UNT_SLOT : t->lean ? CP_LEAN_SLOT : t->hs_cls ? CP_CLS_SLOT : 0;
}
/* A child of counted parent handle pobj that is recorded all the same: a
 * Coll/P2p of an untimed call, since its KernelCh need its slot (the rest
 * of that call is counted). */
static inline int untimed_coll(uint64_t pobj, uint32_t type) {
  return (pobj & CP_UNT_BIT) && (type & (ncclProfileColl | ncclProfileP2p));
}
/* A root event while recording is off: GroupApi and Group by their call's
 * decision, any other root (ProxyCtrl) by the flag now. */
static inline int hs_off_root(const cp_thr *t, uint32_t type) {
  return (type & (ncclProfileGroupApi | ncclProfileGroup)) ? t->hs_mode == HS_OFF
                                                           : atomic_load_explicit(&cp_hot.off, memory_order_relaxed);
}

static void lifecycle(const cp_comm *c, uint64_t ctx, uint32_t mask, int fini) {
  if (!atomic_load_explicit(&cp_hot.trace_on, memory_order_relaxed)) return;
  cp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = CP_REC_LIFECYCLE;
  r.rank = c->nccl_rank;
  r.comm = c->index;
  r.pid = atomic_load_explicit(&cp_hot.pid, memory_order_relaxed);
  r.start_tid = r.stop_tid = cp_gettid();
  r.func = fini ? g.id_fini : g.id_init;
  r.start_ns = r.stop_ns = cp_clock_now();
  r.ctx_addr = ctx;
  r.path = CP_PATH_NONE;
  r.d.lifecycle.event_mask = mask;
  r.d.lifecycle.is_finalize = (uint8_t)fini;
  cp_trace_put(&r);
}

/* Parent link of a new event, taken under the parent pool's lock. */
typedef struct plink {
  uint32_t slot, gen;   /* slot: lane and index, as in the handle */
  int32_t origin_pid;
  int linked;
  uint32_t kc_epoch;     /* KernelCh that took a hold: its expectation's epoch */
  uint32_t acls;         /* a proxy event's: its call's size class (pool.h), from the parent */
  int batched;           /* a KernelCh whose parent holds nothing: its span gathered (kc_span) */
} plink;

/* A new event's slot names its parent (comm: the parent's communicator):
 * linked (1, a reference taken) or, a KernelCh under a kc_span parent,
 * named only (2).  The three stores are written in both branches: with
 * them after the branches the timed start cost 2 instructions more
 * (test/bench/instr_per_event.sh). */
static inline __attribute__((always_inline)) void slot_parent(cp_slot *s, uint32_t comm, const plink *pl) {
  if (pl->linked) {
    s->parent_linked = 1;
    s->took_ref = 1;
    s->parent_comm = comm;
    s->parent_slot = pl->slot;
    s->parent_gen = pl->gen;
  } else if (UNLIKELY(pl->batched)) {
    s->parent_linked = 2;
    s->took_ref = 0;
    s->parent_comm = comm;
    s->parent_slot = pl->slot;
    s->parent_gen = pl->gen;
  }
}

/* Proxy events, counted per size class of their call (lean_estimate.h),
 * and the types whose slot carries that class (pool.h, acls). */
#define CP_PROXY_TYPES (ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileNetPlugin)
#define CP_ACLS_TYPES (ncclProfileColl | ncclProfileP2p | CP_PROXY_TYPES)
/* The class a parent passes down, by its type (ptype: NCCL's type bit,
 * flag bits allowed): another type's slot holds a stale one. */
static inline uint32_t parent_acls(uint32_t ptype, uint32_t acls) {
  return (ptype & CP_ACLS_TYPES) ? acls : 0;
}

/* Only a KernelCh links to a parent that has stopped: a stopped parent's
 * self time was settled at its stop, so all another child could give it
 * is its reference back, and the GPU span of a KernelCh is the one thing
 * a stopped Coll/P2p still takes.  NCCL starts Coll after its CollApi
 * stopped and ProxyOp after its Coll stopped (ABI doc), so this saves a
 * reference, its blacklist entry and the parent update at the stop -- or,
 * for a ProxyOp on the proxy thread, two posts to the owner's inbox. */
static inline void link_parent(cp_pool *pp, const cp_handle_fields *pf, plink *l, int kch, int ax) {
  const uint32_t ls = cp_slot_local(pf->slot);
  cp_slot *ps = cp_pool_slot(pp, ls);
  if (!ps || (cp_slot_key(ps) & ~CP_KEY_LIVE) != ((uint64_t)pf->gen | (uint64_t)pf->path << 32)) return;
  if (UNLIKELY(ax)) l->acls = parent_acls(ps->type, __atomic_load_n(&ps->acls, __ATOMIC_RELAXED));
  l->origin_pid = ps->is_pxn ? ps->origin_pid : 0;   /* the slot's second line: PXN only */
  /* A KernelCh takes over one of the references its Coll/P2p holds for it
   * (pool.h); one beyond them, or of an unsampled call, takes its own. */
  if (kch && cp_pool_hold_take(ps)) l->kc_epoch = ps->kc_epoch;
  else if (kch || ps->live) cp_pool_ref(pp, ps, ls);
  else return;
  l->slot = pf->slot;   /* lane and index: the parent's pool is found again at stop */
  l->gen = ps->gen;
  l->linked = 1;
}

/* ---- kc_span: a Coll/P2p's GPU span gathered on the KernelCh's thread ----
 * Once a pool has seen a KernelCh from another thread (NCCL's proxy
 * thread: kc_remote), its sampled Coll/P2p hold nothing for their
 * KernelCh (kc_n, their channel count, instead of holds: start_gpu_fields).
 * That thread reads the parent at its first KernelCh's start without the
 * pool (generation, path, size class, kc_seq, epoch, kc_n:
 * cp_pool_peek_parent, which takes no hold from it; the later channels
 * find the gathering by the handle, kc_span_find_h), gathers the span of its kc_n channels in a
 * table of CP_KC_SPANS parents (tls.h) and accounts it in its own profile
 * (cp_profile_span: summed over threads at a snapshot) when the last one
 * stops; a parent pushed out of a full table is accounted with the
 * channels it has, and so are a thread's parents still open when it ends
 * (kc_span_thread_end: NCCL's proxy thread ends at ncclCommDestroy, before
 * the summary's snapshot).  The parent's thread does nothing for its KernelCh: no reference,
 * blacklist entry, post or span of its own.  Why: with every event on
 * every call on 2 H200s, that work was most of collprof's excess over the
 * do-nothing plugin at 8 B-1 MiB (share/doc/performance.md, "the KernelCh
 * link"); this took a quarter of the excess away.  What keeps the parent's
 * slot readable without holds is the pool's round robin: a slot is handed
 * out again only after the cursor went round, some 200 calls with the
 * default 1024 slots, while a span more than CP_KC_SLOT_TRUST (32) calls
 * late is dropped anyway; pools under CP_KC_SPAN_MIN_SLOTS slots keep the
 * holds (kc_batch.h).  The KernelCh's duration no longer counts as the
 * parent's child time (the parent's self time then includes it, as for
 * any child on another thread that links nothing). */
#define CP_KC_SPAN_MIN_SLOTS 512u
/* The gathering of parent (pool, slot idx, generation gen under gen_mask:
 * the whole one, or a handle's low byte), looked up from the entry found
 * last (t->kcs_last): a Coll's channels start one after the other, and
 * stop so. */
static inline __attribute__((always_inline)) struct cp_kc_span *kc_span_find(cp_thr *t, const cp_pool *pp, uint32_t idx,
                                                                            uint32_t gen, uint32_t gen_mask) {
  const uint32_t l = t->kcs_last % CP_KC_SPANS;
  for (uint32_t k = 0; k < CP_KC_SPANS; k++) {
    const uint32_t i = (l + k) % CP_KC_SPANS;
    struct cp_kc_span *e = &t->kcs[i];
    if (e->pool == pp && e->idx == idx && (e->gen & gen_mask) == gen) {
      t->kcs_last = i;
      return e;
    }
  }
  return NULL;
}
static void kc_span_account(cp_thr *t, struct cp_kc_span *e) {
  if (e->bad) cp_inc(&t->gpu_dropped, 1);
  else if (e->nkch && e->ge >= e->gs) {
    cp_path_mark_gpu(e->path);
    cp_profile_span(e->path, e->ge - e->gs, (int)e->first, e->bytes);
  }
  memset(e, 0, sizeof *e);
}
/* tls.h cp_thr_exit_hook: the ending thread's open parents, with what
 * they have, and an empty table for the thread that takes the block on. */
static void kc_span_thread_end(cp_thr *t) {
  for (int i = 0; i < CP_KC_SPANS; i++)
    if (t->kcs[i].pool) kc_span_account(t, &t->kcs[i]);
}
/* A channel joins its parent's gathering. */
static inline void kc_span_join(struct cp_kc_span *e, plink *l) {
  e->started++;
  l->kc_epoch = e->started <= e->kc_n ? e->kc_epoch : 0;
  l->batched = 1;
}
/* The gathering a KernelCh's parent handle names (its generation's low
 * byte and its path, as cp_pool_peek_parent compares them), before any
 * read of the parent's slot: every channel after a Coll's first finds it
 * here and reads nothing of the slot (link_parent_other), which its first
 * channel read already.  Why: that read was some 60 instructions of each
 * of the proxy thread's KernelCh starts (callgrind, collprof-bench proxy
 * mode); with 24 channels a call it is made once instead of 24 times. */
static struct cp_kc_span *kc_span_find_h(cp_thr *t, const cp_pool *pp, uint32_t idx, uint32_t gen8, uint32_t path) {
  struct cp_kc_span *e = kc_span_find(t, pp, idx, gen8, 0xFFu);
  return e && e->path == path ? e : NULL;
}
static void kc_span_open(cp_thr *t, cp_pool *pp, uint32_t ls, uint32_t path, const cp_parent_view *v, plink *l) {
  struct cp_kc_span *e = kc_span_find(t, pp, ls, v->gen, ~0u);
  if (!e) {
    uint32_t top = 0;
    for (int i = 0; i < CP_KC_SPANS; i++) {
      if (t->kcs[i].age > top) top = t->kcs[i].age;
      if (!e || !t->kcs[i].pool || (e->pool && t->kcs[i].age < e->age)) e = &t->kcs[i];
    }
    if (e->pool) kc_span_account(t, e);   /* the oldest, incomplete: what it has */
    t->kcs_last = (uint32_t)(e - t->kcs);
    e->pool = pp;
    e->idx = ls;
    e->gen = v->gen;
    e->path = path;
    e->kc_n = v->kc_n;
    e->first = v->first;
    e->kc_epoch = v->kc_epoch;
    e->kc_seq = v->kc_seq;
    /* the size class from acls (written atomically), not the slot's
     * bytes (written plainly by its thread): a byte count of that class */
    e->bytes = v->acls > 1 ? 1ull << (v->acls - 2) : 0;
    e->age = top + 1;
  }
  kc_span_join(e, l);
}

/* A parent in another pool (start_general).  A pool this thread owns, or
 * a locked one: held as usual.  Another thread's: read without the pool,
 * its reference posted (pool_owner.h); a KernelCh takes one of its holds
 * there and then, so it knows at once whether it reports to the sample. */
static void link_parent_other(cp_thr *t, cp_pool *pp, const cp_handle_fields *pf, plink *l, int kch, int ax) {
  const uintptr_t o = cp_pool_owner(pp);
  cp_parent_view v;
  int took = 0, r = -1;
  const uint32_t ls = cp_slot_local(pf->slot);
  if (o != 0 && o != (uintptr_t)t) {
    if (kch) {
      struct cp_kc_span *e;
      if (!__atomic_load_n(&pp->kc_remote, __ATOMIC_RELAXED)) __atomic_store_n(&pp->kc_remote, 1, __ATOMIC_RELAXED);
      else if ((e = kc_span_find_h(t, pp, ls, pf->gen, pf->path)) != NULL) {   /* a later channel */
        kc_span_join(e, l);
        l->slot = pf->slot;
        l->gen = e->gen;
        return;
      }
    }
    r = cp_pool_peek_parent(pp, ls, pf->gen, pf->path, kch, &v, &took);
  }
  if (r < 0) {
    const int own = cp_pool_enter(pp, t);
    link_parent(pp, pf, l, kch, ax);
    cp_pool_leave(pp, own);
    return;
  }
  /* (the slot's type is not read without the pool: the path's, the same) */
  if (r == 1 && ax && cp_path_valid_i(pf->path)) l->acls = parent_acls(cp_path_type(pf->path), v.acls);
  if (r == 1 && kch && !took && v.kc_n) {   /* the parent holds nothing: its span gathered here */
    kc_span_open(t, pp, ls, pf->path, &v, l);
    l->slot = pf->slot;
    l->gen = v.gen;
    return;
  }
  if (r == 0 || (!kch && !v.live)) return;   /* gone, or stopped (link_parent) */
  if (took) l->kc_epoch = v.kc_epoch;
  else {
    const cp_post m = {.idx = ls, .gen = v.gen, .op = CP_POST_REF};
    cp_pool_post(pp, &m);
  }
  if (kch) cp_kcb_open(t, pp, ls, v.gen);   /* its stop joins the parent's batch */
  l->slot = pf->slot;
  l->gen = v.gen;
  l->origin_pid = 0;   /* another thread's pool is never the PXN detach pool (locked) */
  l->linked = 1;
}

/* Give back a reference on a parent in another pool, with what the child
 * adds (see cp_pool_parent_done): held when this thread may, else posted
 * -- a KernelCh's (is_kc) into its parent's batch when one is open
 * (kc_batch.h). */
static void release_parent_other(cp_thr *t, cp_pool *pp, uint32_t pslot, uint32_t pgen, int took_ref,
                                 uint64_t dur, int kch, int bad, uint64_t gs, uint64_t ge, int is_kc) {
  const uint32_t ls = cp_slot_local(pslot);
  const uintptr_t o = cp_pool_owner(pp);
  if (o == 0 || o == (uintptr_t)t) {
    const int own = cp_pool_enter(pp, t);
    cp_slot *ps = cp_pool_slot(pp, ls);
    if (ps && ps->gen == pgen) cp_pool_parent_done(pp, ps, ls, took_ref != 0, dur, kch != 0, bad, gs, ge);
    cp_pool_leave(pp, own);
    return;
  }
  if (is_kc && cp_kcb_take(t, pp, ls, pgen, took_ref, dur, kch, bad, gs, ge)) return;
  const cp_post m = {.idx = ls, .gen = pgen, .op = CP_POST_UNREF, .flags = (uint8_t)(bad ? CP_POSTF_BAD : 0),
                     .nkch = (uint16_t)(kch && !bad), .nref = took_ref != 0, .dur = dur, .gs = gs, .ge = ge};
  cp_pool_post(pp, &m);
}

/* A Coll's trace details in a full record: a PXN Coll's, or one whose
 * details do not pack into a compact one (trace.h, cp_erec_coll_pack).
 * Pool lock held: string lookups hit the per-thread cache; dt is the
 * datatype id already interned. */
static void coll_details(cp_thr *t, cp_rec *r, const ncclProfilerEventDescr_v5_t *d, uint32_t dt) {
  r->d.coll.seq = d->coll.seqNumber;
  r->d.coll.count = d->coll.count;
  r->d.coll.datatype = dt;
  r->d.coll.algo = cp_str_intern_t(t, d->coll.algo);
  r->d.coll.proto = cp_str_intern_t(t, d->coll.proto);
  r->d.coll.root = d->coll.root;
  r->d.coll.channels = d->coll.nChannels;
  r->d.coll.nwarps = d->coll.nWarps;
}

/* The details as a compact record holds them (trace.h, cp_erec: d, x, y);
 * r zeroed by the caller.  0 for a Coll whose details do not fit
 * (cp_erec_coll_pack): it takes the full record. */
static inline __attribute__((always_inline)) int compact_details(cp_thr *t, cp_erec *r,
                                                                 const ncclProfilerEventDescr_v5_t *d,
                                                                 uint32_t type, uint32_t dt) {
  switch (type) {
  case ncclProfileColl:
    return cp_erec_coll_pack(r, d->coll.seqNumber, d->coll.count, d->coll.root, dt,
                             cp_str_intern_t(t, d->coll.algo), cp_str_intern_t(t, d->coll.proto),
                             (uint8_t)d->coll.nChannels, (uint8_t)d->coll.nWarps);
  case ncclProfileGroupApi:
    r->d.group_api.group_depth = d->groupApi.groupDepth;
    r->d.group_api.graph_captured = d->groupApi.graphCaptured;
    break;
  case ncclProfileCollApi:
    r->d.coll_api.count = d->collApi.count;
    r->x = cp_str_intern_t(t, d->collApi.datatype);
    r->d.coll_api.root = d->collApi.root;
    r->d.coll_api.graph_captured = d->collApi.graphCaptured;
    break;
  case ncclProfileP2pApi:
    r->d.coll_api.count = d->p2pApi.count;
    r->x = cp_str_intern_t(t, d->p2pApi.datatype);
    r->d.coll_api.graph_captured = d->p2pApi.graphCaptured;
    break;
  case ncclProfileKernelLaunch:
    r->d.kernel_launch.stream = (uint64_t)(uintptr_t)d->kernelLaunch.stream;
    break;
  case ncclProfileP2p:
    r->d.p2p.count = d->p2p.count;
    r->x = dt;
    r->d.p2p.peer = d->p2p.peer;
    r->d.p2p.channels = d->p2p.nChannels;
    break;
  case ncclProfileProxyOp:
    r->d.proxy_op.peer = d->proxyOp.peer;
    r->d.proxy_op.nsteps = d->proxyOp.nSteps;
    r->d.proxy_op.chunk_size = d->proxyOp.chunkSize;
    r->d.proxy_op.is_send = d->proxyOp.isSend;
    r->d.proxy_op.channel = d->proxyOp.channelId;
    break;
  case ncclProfileProxyStep:
    r->d.proxy_step.step = d->proxyStep.step;
    break;
  case ncclProfileKernelCh:
    r->d.kernel_ch.gpu_start = d->kernelCh.pTimer;
    r->x = d->kernelCh.channelId;
    break;
  case ncclProfileNetPlugin:
    r->d.net_plugin.id = d->netPlugin.id;
    break;
  default:
    break;
  }
  return 1;
}

/* A compact record's header (trace.h, cp_erec), the rest zeroed. */
static inline __attribute__((always_inline)) void erec_head(const cp_thr *t, cp_erec *r, uint32_t type,
                                                            uint32_t path, uint32_t comm, uint64_t now,
                                                            uint64_t pobj, uint64_t handle) {
  memset(r, 0, sizeof *r);
  r->kind = CP_REC_EVENT_C;
  r->type_bit = (uint8_t)__builtin_ctz(type);
  r->path = (uint16_t)path;
  r->comm = (uint16_t)comm;
  r->start_tid = t->tid;
  r->start_ns = now;
  r->parent_obj = pobj;
  r->event_addr = handle;
}
/* The compact record of an event that may have one: not PXN, on a real
 * path of a registered communicator.  0 where it has none (a Coll whose
 * details do not fit): the caller writes the full record over it. */
static inline __attribute__((always_inline)) int start_record_c(cp_thr *t, cp_erec *r,
                                                                 const ncclProfilerEventDescr_v5_t *d,
                                                                 uint32_t type, uint32_t path, uint32_t comm,
                                                                 uint32_t dt, uint64_t now, uint64_t pobj,
                                                                 uint64_t handle) {
  erec_head(t, r, type, path, comm, now, pobj, handle);
  return compact_details(t, r, d, type, dt);
}
/* The same for a Coll whose lookups the memo had (coll_memo.h): its ids
 * from there, nothing interned. */
static inline __attribute__((always_inline)) int start_record_cm(const cp_thr *t, cp_erec *r,
                                                                  const ncclProfilerEventDescr_v5_t *d,
                                                                  const cp_rmemo_ent *m, uint32_t comm,
                                                                  uint64_t now, uint64_t pobj, uint64_t handle) {
  erec_head(t, r, ncclProfileColl, m->path, comm, now, pobj, handle);
  return cp_erec_coll_pack(r, d->coll.seqNumber, d->coll.count, d->coll.root, m->dt_id, m->algo_id, m->proto_id,
                           (uint8_t)d->coll.nChannels, (uint8_t)d->coll.nWarps);
}

/* Trace on: the event record is built in the slot at start (pool lock held)
 * and copied once, at stop, into the ring: the compact form where the
 * writer can fill in the rest, else the full one. */
__attribute__((noinline)) static void start_record(cp_thr *t, cp_slot *s, const ncclProfilerEventDescr_v5_t *d,
                                                   const cp_comm *comm, int pxn, uint32_t type, uint32_t path,
                                                   int mypid, uint32_t func, uint32_t dt, uint64_t now,
                                                   uint64_t pobj, uint64_t handle, uint64_t ctxv) {
  if (LIKELY(comm && !pxn && path < CP_PATH_PXN && ctxv == comm->ctx_value) &&
      LIKELY(start_record_c(t, &s->erec, d, type, path, comm->index, dt, now, pobj, handle)))
    return;
  cp_rec *r = &s->rec;
  /* Every header field is written; only the details are zeroed first. */
  r->kind = CP_REC_EVENT;
  r->is_pxn = (uint8_t)pxn;
  r->state_arg_kind = 0;
  r->pad0 = 0;
  r->type = type;
  r->path = path;
  r->rank = comm ? comm->nccl_rank : -1;
  r->comm = comm ? comm->index : 0;
  r->pid = mypid;
  r->start_tid = t->tid;
  r->stop_tid = 0;
  r->origin_pid = pxn ? s->origin_pid : 0;   /* set for PXN events only (cp_pool_reset_slot) */
  r->func = func;
  r->start_ns = now;
  r->stop_ns = 0;
  r->parent_obj = pobj;
  r->event_addr = handle;
  r->ctx_addr = ctxv;
  memset(&r->d, 0, sizeof r->d);
  if (type == ncclProfileColl) {   /* PXN, a pseudo-path, or details a compact record cannot hold */
    coll_details(t, r, d, dt);
  } else {   /* PXN, or a pseudo-path (unknown parent, table full): details as a compact record has them */
    cp_erec e;
    memset(&e, 0, sizeof e);
    compact_details(t, &e, d, type, dt);
    cp_erec_details(&e, type, r);
  }
}

/* What both start paths take from the descriptor: the interned func, the
 * datatype (Coll/P2p) and the bytes moved. */
static inline __attribute__((always_inline)) void descr_func(cp_thr *t, const ncclProfilerEventDescr_v5_t *d,
                                                             uint32_t type, uint32_t *func, uint32_t *dt,
                                                             uint64_t *bytes) {
  *func = *dt = 0;
  *bytes = 0;
  switch (type) {
  case ncclProfileCollApi: *func = cp_str_intern_t(t, d->collApi.func); break;
  case ncclProfileP2pApi: *func = cp_str_intern_t(t, d->p2pApi.func); break;
  case ncclProfileColl:
    *func = cp_str_intern_t(t, d->coll.func);
    *dt = cp_str_intern_t(t, d->coll.datatype);
    *bytes = (uint64_t)d->coll.count * cp_datatype_size(*dt);
    break;
  case ncclProfileP2p:
    *func = cp_str_intern_t(t, d->p2p.func);
    *dt = cp_str_intern_t(t, d->p2p.datatype);
    *bytes = (uint64_t)d->p2p.count * cp_datatype_size(*dt);
    break;
  case ncclProfileProxyOp: *func = d->proxyOp.isSend ? g.id_send : g.id_recv; break;
  default: break;
  }
}

/* References a Coll/P2p of a sampled call holds for its KernelCh children. */
static inline uint32_t kc_hold(const ncclProfilerEventDescr_v5_t *d, uint32_t type) {
  const uint32_t n = type == ncclProfileColl ? d->coll.nChannels : d->p2p.nChannels;
  return n ? n : 1;
}

/* An API call's count x datatype size, for the GPU sampling rule's small
 * calls (mask_control.c); its path's own bytes stay 0, as before (the
 * Coll/P2p below it carries them).  The datatype's size is kept per thread
 * by NCCL's string pointer, unchecked: interning it at every call cost 7
 * instructions per event of the whole call (test/bench/instr_per_event.sh,
 * GPU sampling off), and a stale pointer could only misjudge which
 * sampling stream a call's decision takes, never a recorded number. */
static inline uint64_t api_bytes(cp_thr *t, const ncclProfilerEventDescr_v5_t *d, uint32_t type) {
  const char *dt = type == ncclProfileCollApi ? d->collApi.datatype : d->p2pApi.datatype;
  const size_t n = type == ncclProfileCollApi ? d->collApi.count : d->p2pApi.count;
  if (UNLIKELY(dt != t->api_dt)) {
    t->api_dt = dt;
    t->api_dt_size = cp_datatype_size(cp_str_intern_t(t, dt));
  }
  return (uint64_t)n * t->api_dt_size;
}

/* A CollApi/P2pApi start's hooks: the mask control's (it names the call;
 * bytes: api_bytes). */
static inline __attribute__((always_inline)) void api_hooks(cp_thr *t, const ncclProfilerEventDescr_v5_t *d,
                                                            uint32_t type, uint32_t path, uint64_t bytes) {
  if (UNLIKELY(type == ncclProfileCollApi ? d->collApi.graphCaptured : d->p2pApi.graphCaptured))
    cp_mask_on_graph_capture();
  cp_lt_api(t, bytes);
  cp_mask_on_api_call(path, t->sampled, bytes);
}

/* After a recorded start, outside the pool lock: the capture line, the
 * mask control's hooks (GroupApi opens a call, CollApi/P2pApi names it)
 * and the launch timer's (launch_timer.h: a KernelLaunch may be timed, the
 * Coll/P2p after it are its work, the next GroupApi ends that). */
static inline __attribute__((always_inline)) void start_hooks_b(cp_thr *t, const ncclProfilerEventDescr_v5_t *d,
                                                                uint32_t type, uint32_t path, uint64_t handle,
                                                                uint64_t ctxv, uint64_t bytes, uint32_t comm_index,
                                                                const uint64_t *api_b) {
  if (UNLIKELY(__atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED))) cp_capture_start(ctxv, handle, d);
  if (type & (ncclProfileColl | ncclProfileP2p)) {
    cp_lt_claim(t, path, type, bytes, handle);
  } else if (type == ncclProfileKernelLaunch) {
    cp_lt_launch_start(t, d->kernelLaunch.stream, handle, comm_index, d->rank);
  } else if (type == ncclProfileGroupApi) {
    cp_lt_group_start(t);   /* t->sampled: set by hs_decide */
    if (UNLIKELY(d->groupApi.graphCaptured)) cp_mask_on_graph_capture();
    cp_mask_on_group_start(t->tid);
  } else if (type == ncclProfileCollApi || type == ncclProfileP2pApi) {
    api_hooks(t, d, type, path, api_b ? *api_b : api_bytes(t, d, type));
  }
}
/* ...where an API call's bytes are found from its descriptor (api_bytes). */
static inline __attribute__((always_inline)) void start_hooks(cp_thr *t, const ncclProfilerEventDescr_v5_t *d,
                                                              uint32_t type, uint32_t path, uint64_t handle,
                                                              uint64_t ctxv, uint64_t bytes, uint32_t comm_index) {
  start_hooks_b(t, d, type, path, handle, ctxv, bytes, comm_index, NULL);
}

/* The GPU side of a new slot (pool lock held), for both start paths: a
 * Coll/P2p of a sampled call holds its slot for hold KernelCh children
 * (hold > 0 only then); a KernelCh records its GPU start, the hold epoch it
 * took over, and (own_clock: not PXN, not the self-cost pool) refines the
 * communicator's GPU-minus-host clock offset. */
static inline __attribute__((always_inline)) void start_gpu_fields(cp_pool *pool, cp_slot *s, uint32_t idx,
                                                                   uint32_t hold, uint32_t type,
                                                                   const ncclProfilerEventDescr_v5_t *d,
                                                                   const plink *pl, uint64_t now, int own_clock,
                                                                   int sampled) {
  if (UNLIKELY(hold)) {
    __atomic_store_n(&s->span_first, (uint8_t)(sampled == 2), __ATOMIC_RELAXED);   /* kc_span reads it */
    s->span_bad = 0;
    /* kc_ops, kc_seq, hold, kc_epoch: read by KernelCh on other threads
     * without the pool (pool_owner.h) */
    const uint64_t ops = ++pool->kc_ops_own;
    if ((ops & (CP_KC_OPS_BATCH - 1)) == 0) __atomic_store_n(&pool->kc_ops, ops, __ATOMIC_RELAXED);
    __atomic_store_n(&s->kc_seq, ops, __ATOMIC_RELAXED);
    __atomic_store_n(&s->kc_epoch, 0, __ATOMIC_RELAXED);
    if (__atomic_load_n(&pool->kc_remote, __ATOMIC_RELAXED) && pool->capacity >= CP_KC_SPAN_MIN_SLOTS &&
        !s->fallback && !pool->scratch) {
      /* KernelCh come from another thread here: no hold, the proxy thread
       * gathers the span itself (kc_span) */
      __atomic_store_n(&s->kc_epoch, cp_mask_kc_expect(hold), __ATOMIC_RELAXED);
      __atomic_store_n(&s->kc_n, (uint8_t)(hold < 255 ? hold : 255), __ATOMIC_RELEASE);
    } else {
      __atomic_store_n(&s->kc_n, 0, __ATOMIC_RELAXED);
      cp_pool_hold(pool, s, idx, hold);
      /* KernelCh events due (one sample in flight): only those that will
       * find the hold report back at their stop. */
      const uint32_t held = __atomic_load_n(&s->hold, __ATOMIC_RELAXED);
      if (held) __atomic_store_n(&s->kc_epoch, cp_mask_kc_expect(held), __ATOMIC_RELAXED);
    }
  } else if (type & (ncclProfileColl | ncclProfileP2p)) {
    /* what a KernelCh child reads of its parent on the slot's second
     * line, which cp_pool_reset_slot leaves alone */
    s->span_bad = 0;
    __atomic_store_n(&s->span_first, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->kc_seq, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->kc_epoch, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->kc_n, 0, __ATOMIC_RELAXED);
  }
  if (type == ncclProfileKernelCh) {
    __atomic_store_n(&s->kc_epoch, pl->kc_epoch, __ATOMIC_RELAXED);
    s->gpu_start = d->kernelCh.pTimer;
    if (own_clock) {
      const int64_t off = (int64_t)(d->kernelCh.pTimer - now);
      if (!pool->gpu_off_valid || off < pool->gpu_off) { pool->gpu_off = off; pool->gpu_off_valid = 1; }
    }
  }
}

/* The call's size class on the slot (pool.h, acls): a Coll/P2p's own, a
 * proxy event's from its parent (0 when it had none that carried one). */
static inline __attribute__((always_inline)) void start_acls(cp_slot *s, uint32_t type, uint64_t bytes,
                                                             const plink *pl) {
  if (type & (ncclProfileColl | ncclProfileP2p))
    __atomic_store_n(&s->acls, (uint8_t)(cp_gcls_of(bytes) + 1), __ATOMIC_RELAXED);
  else if (UNLIKELY(type & CP_PROXY_TYPES))
    __atomic_store_n(&s->acls, (uint8_t)pl->acls, __ATOMIC_RELAXED);
}

/* A counted or off call's GroupApi: the pool takes in what other threads
 * posted to it (start_counted says why). */
static inline void group_takes_posts(cp_thr *t, cp_pool *pool) {
  /* a hint read outside the pool: in_seen atomically (a holder on another
   * thread may be draining), and entering settles it */
  if (UNLIKELY(atomic_load_explicit(&pool->in_tail, memory_order_acquire) !=
               __atomic_load_n(&pool->in_seen, __ATOMIC_RELAXED)))
    cp_pool_leave(pool, cp_pool_enter(pool, t));
}

/* A counted start that needs no stop: a KernelLaunch the launch timer
 * left alone (no launch of this thread open) and a Group (v5: no event
 * names it as parent; only v5 calls are counted).  NCCL calls stopEvent
 * only with a handle it was given (ABI doc; ncclProfilerStopKernelLaunchEvent
 * and the Group's stop test it), so a NULL handle spares NCCL's thread a
 * callback whose counted stop would do nothing (stop_quiet).  The
 * KernelLaunch stop in particular comes right after NCCL's launch call,
 * with collprof's lines cold.  A capture keeps every handle, so that it
 * records what NCCL would call. */
static inline __attribute__((always_inline)) void counted_drop_handle(cp_thr *t, void **eHandle, uint32_t type) {
  if ((type == ncclProfileGroup || (type == ncclProfileKernelLaunch && t->lt_cur == 0)) &&
      !__atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED))
    *eHandle = NULL;
}

/* An event of a counted call (host sampling, above): its path counted, a
 * handle of generation 0 that still names its path and pool, the hooks as
 * for any event.  A counted call never enters its pool, so at its GroupApi
 * the pool takes in what other threads posted to it (pool_owner.h), as any
 * recorded event's start would: a KernelCh stop's GPU span reaches its
 * Coll/P2p, and its path counts as GPU-sampled for the next call's
 * sampling decision (mask_control.h), no later than with every call
 * recorded. */
static inline __attribute__((always_inline)) void start_counted(cp_thr *t, void **eHandle,
                                                                const ncclProfilerEventDescr_v5_t *d,
                                                                uint32_t type, uint32_t path, uint64_t bytes,
                                                                cp_pool *pool, uint64_t ctxv, uint32_t xslot) {
  if (type == ncclProfileGroupApi) group_takes_posts(t, pool);
  cp_prof_ent *pe = LIKELY(path != CP_PATH_NONE) ? cp_prof_ent_get(t, path) : NULL;
  if (pe && cp_profile_count_e(pe, bytes)) hs_ask(t, pe);
  const uint64_t handle = pool_handle(pool, path, counted_slot(type) | xslot, 0);
  *eHandle = (void *)(uintptr_t)handle;
  cp_inc(&t->counted, 1);
  start_hooks(t, d, type, path, handle, ctxv, bytes, pool->comm_index);
  counted_drop_handle(t, eHandle, type);
}

/* A counted start the memo holds (counted_memo.h): the path's count and
 * the handle from the pool's handle bits (counted_hit_count); then the
 * hooks (counted_hit_hooks), unless they have nothing to do
 * (counted_hooks_idle). */
static inline __attribute__((always_inline)) uint64_t counted_hit_count(cp_thr *t, void **eHandle,
                                                                        const cp_cmemo_ent *e, uint64_t hkey) {
  if (UNLIKELY(cp_profile_count_m(e->prof, e->bytes, e->cls_calls))) hs_ask(t, e->prof);
  /* pool_handle's fields, without its masks: a memo's path is a real id
   * and counted_slot below 16 */
  const uint64_t handle = hkey | e->hbits;
  *eHandle = (void *)(uintptr_t)handle;
  cp_inc(&t->counted, 1);
  return handle;
}
static inline __attribute__((always_inline)) void counted_hit_hooks(cp_thr *t, const ncclProfilerEventDescr_v5_t *d,
                                                                    uint32_t type, const cp_cmemo_ent *e,
                                                                    uint64_t handle, uint64_t ctxv) {
  /* (bytes: only a Coll/P2p's hooks read them) */
  start_hooks_b(t, d, type, (uint32_t)(e->hbits >> 44) & 0xFFFFu, handle, ctxv, e->bytes,
                (uint32_t)(handle >> 32) & 0xFFFu, &e->bytes);
}
static inline __attribute__((always_inline)) void counted_hit(cp_thr *t, void **eHandle,
                                                              const ncclProfilerEventDescr_v5_t *d, uint32_t type,
                                                              const cp_cmemo_ent *e, uint64_t hkey, uint64_t ctxv) {
  counted_hit_hooks(t, d, type, e, counted_hit_count(t, eHandle, e, hkey), ctxv);
  counted_drop_handle(t, eHandle, type);
}
/* Whether start_hooks_b has nothing to do for this counted start: no
 * capture, and a Group (or a proxy type), a Coll/P2p while no timed launch
 * is open, or a KernelLaunch the launch timer skips (counted off as it
 * would count it).  A GroupApi, CollApi or P2pApi always has hooks. */
static inline __attribute__((always_inline)) int counted_hooks_idle(cp_thr *t, uint32_t type) {
  if (UNLIKELY(__atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED))) return 0;
  if (type & (ncclProfileColl | ncclProfileP2p)) return t->lt_cur == 0;
  if (type == ncclProfileKernelLaunch) return cp_lt_launch_quick(t);
  return !(type & (ncclProfileGroupApi | ncclProfileCollApi | ncclProfileP2pApi));
}
/* ...and where it has: out of line, so that start_counted_child calls
 * nothing but by tail calls and saves no register. */
static __attribute__((noinline)) ncclResult_t counted_hooks_call(cp_thr *t, const ncclProfilerEventDescr_v5_t *d,
                                                                 uint32_t type, const cp_cmemo_ent *e,
                                                                 uint64_t handle, uint64_t ctxv) {
  counted_hit_hooks(t, d, type, e, handle, ctxv);
  return NCCL_OK;
}

/* A counted event of a CP_CLS_BIT call, before its handle is made from
 * bits (the pool's handle bits, or slot bits << 8): a Coll/P2p adds its
 * size class to them and counts as a call whose proxy events carry it; a
 * proxy event with a class counts by it (lean_estimate.h).  Returns the
 * bits. */
static __attribute__((noinline)) uint64_t cls_note(cp_thr *t, uint32_t type, uint32_t path, uint64_t bytes,
                                                   uint64_t bits) {
  if (path == CP_PATH_NONE) return bits;
  if (type & (ncclProfileColl | ncclProfileP2p)) {
    cp_profile_seen_t(t, path, bytes);
    return (bits & ~CP_ACLS_BITS) | (uint64_t)(cp_gcls_of(bytes) + 1) << (CP_ACLS_SLOT_SHIFT + 8);
  }
  const unsigned a = (unsigned)(bits >> (CP_ACLS_SLOT_SHIFT + 8)) & 0x3Fu;
  if ((type & CP_PROXY_TYPES) && a) cp_profile_acls_t(t, path, a - 1);
  return bits;
}

/* The fast path's counted start (start_fast): from the thread's memo of
 * earlier lookups (counted_memo.h) when it holds this event, else as
 * start_counted, after which the memo holds it.  Both do the same.  hkey:
 * the pool's handle bits, with CP_UNT_BIT in an untimed call, CP_CLS_BIT
 * and a class as cls_note says (the memo's entries never hold them). */
static __attribute__((noinline)) void start_counted_fast(cp_thr *t, void **eHandle,
                                                         const ncclProfilerEventDescr_v5_t *d, uint32_t type,
                                                         uint32_t parent_path, cp_pool *pool, uint64_t hkey,
                                                         uint64_t ctxv) {
  const cp_cmemo_key k = cp_cmemo_key_of(d, type);
  const cp_cmemo_ent *e = cp_cmemo_find(t, parent_path, type, &k);
  if (LIKELY(e != NULL)) {
    if (type == ncclProfileGroupApi) group_takes_posts(t, pool);
    if (UNLIKELY(hkey & CP_CLS_BIT)) hkey = cls_note(t, type, (uint32_t)(e->hbits >> 44) & 0xFFFFu, e->bytes, hkey);
    counted_hit(t, eHandle, d, type, e, hkey, ctxv);
    return;
  }
  uint32_t func, dt;
  uint64_t bytes;
  descr_func(t, d, type, &func, &dt, &bytes);
  const uint32_t path = cp_path_child_t(t, parent_path, type, func);
  const uint64_t xbits = UNLIKELY(hkey & CP_CLS_BIT) ? cls_note(t, type, path, bytes, hkey) : hkey;
  start_counted(t, eHandle, d, type, path, bytes, pool, ctxv, (uint32_t)(xbits >> 8) & CP_XSLOTS);
  cp_prof_ent *pe = path != CP_PATH_NONE ? cp_prof_ent_get(t, path) : NULL;
  if (!pe) return;
  uint64_t *cls_calls = NULL;   /* a Coll/P2p's size class: made by the count above */
  if (bytes) {
    if (!pe->cls) return;       /* not made (no memory): the long way retries it */
    cls_calls = &pe->cls->c[cp_gcls_of(bytes)].calls;
  }
  const int api = type == ncclProfileCollApi || type == ncclProfileP2pApi;
  cp_cmemo_fill(t, parent_path, type, &k, ((uint64_t)path << 44) | ((uint64_t)counted_slot(type) << 8), pe,
                api ? api_bytes(t, d, type) : bytes, cls_calls);
}

/* A lean call's CollApi/P2pApi at api_path: the Coll/P2p NCCL will not
 * send is counted here, on the path it would have had, with the API
 * event's func and bytes (mask_control.c, "Lean calls"), and its count
 * marked as made so (cp_gcls lean: the snapshot scales its descendants'
 * counts by it).  The launch timer's countdown runs as at the launch it
 * would have seen, so that a large call's launch still comes round to be
 * timed (lean_next_ok then asks for a full call).  The lookup is
 * remembered per thread (t->lmemo, keyed by the API event's path, func,
 * datatype and count as counted_memo.h keys): in a loop every lean call
 * finds it there. */
static __attribute__((noinline)) void lean_derive(cp_thr *t, const ncclProfilerEventDescr_v5_t *d, uint32_t type,
                                                  uint32_t api_path) {
  const cp_cmemo_key k = cp_cmemo_key_of(d, type);
  cp_cmemo_ent *m = &t->lmemo;
  const uint64_t pt = cp_cmemo_pt(api_path, type);
  if (LIKELY(cp_cmemo_holds(m, pt, &k))) {
    if (UNLIKELY(cp_profile_count_m(m->prof, m->bytes, m->cls_calls))) hs_ask(t, m->prof);
    cp_inc(&((cp_gcls_ent *)(void *)m->cls_calls)->lean, 1);   /* the class's entry: calls comes first */
  } else {
    const int coll = type == ncclProfileCollApi;
    const uint32_t func = cp_str_intern_t(t, k.func);
    const uint32_t path = cp_path_child_t(t, api_path, coll ? ncclProfileColl : ncclProfileP2p, func);
    cp_prof_ent *pe = path != CP_PATH_NONE ? cp_prof_ent_get(t, path) : NULL;
    if (!pe) return;
    const uint64_t bytes = api_bytes(t, d, type);
    if (cp_profile_count_e(pe, bytes)) hs_ask(t, pe);
    if (!pe->cls) return;   /* 0 bytes, or no memory: its count stays seen as exact, unscaled below */
    cp_inc(&pe->cls->c[cp_gcls_of(bytes)].lean, 1);
    if (t != &cp_thr_emergency) {
      m->pt = pt;
      m->func = k.func;
      m->dt = k.dt;
      m->count = k.count;
      m->prof = pe;
      m->bytes = bytes;
      m->cls_calls = &pe->cls->c[cp_gcls_of(bytes)].calls;
    }
  }
  cp_inc(&t->counted, 1);
  if (cp_lt_every && t->lt_cur == 0 && t->lt_big && t->lt_left) t->lt_left--;
}

/* A counted event under a lean call's handle (hkey carries CP_LEAN_BIT,
 * which its own handle inherits).  A CollApi/P2pApi is counted, and its
 * Coll/P2p with it (lean_derive).  A Coll/P2p that comes all the same
 * (the mask changed within the call: a freeze) was counted so already:
 * it gets a handle that names its path, and no count. */
static __attribute__((noinline)) void start_lean(cp_thr *t, void **eHandle, const ncclProfilerEventDescr_v5_t *d,
                                                 uint32_t type, uint32_t parent_path, cp_pool *pool, uint64_t hkey,
                                                 uint64_t ctxv) {
  if (type & (ncclProfileColl | ncclProfileP2p)) {
    uint32_t func, dt;
    uint64_t bytes;
    descr_func(t, d, type, &func, &dt, &bytes);
    const uint32_t path = cp_path_child_t(t, parent_path, type, func);
    *eHandle = (void *)(uintptr_t)pool_handle(pool, path, counted_slot(type) | CP_LEAN_SLOT, 0);
    return;
  }
  start_counted_fast(t, eHandle, d, type, parent_path, pool, hkey | CP_LEAN_BIT, ctxv);
  if ((type & (ncclProfileCollApi | ncclProfileP2pApi)) && *eHandle)
    lean_derive(t, d, type, (uint32_t)((uint64_t)(uintptr_t)*eHandle >> 44) & 0xFFFFu);
}

/* start_lean's common case, from cp_core_start: a CollApi/P2pApi of this
 * thread's lane under a lean call's GroupApi, whose lookup the memo holds
 * (as start_counted_child, plus lean_derive); anything else goes the long
 * way (start_rest). */
static ncclResult_t start_rest(cp_thr *t, void **eHandle, const ncclProfilerEventDescr_v5_t *d, uint64_t ctxv);
static __attribute__((noinline)) ncclResult_t start_lean_fast(cp_thr *t, void **eHandle,
                                                              const ncclProfilerEventDescr_v5_t *d, uint64_t ctxv) {
  const uint64_t pobj = (uint64_t)(uintptr_t)d->parentObj;
  const uint64_t type64 = d->type;
  cp_pool *pool = t->last_lpool;
  if (t->last_pool != pool || !(type64 & (ncclProfileCollApi | ncclProfileP2pApi)) ||
      ((pobj ^ t->last_hkey) & CP_HKEY_MASK) != 0 ||
      UNLIKELY(pool_finalized(pool) | atomic_load_explicit(&cp_hot.stopped, memory_order_relaxed)) ||
      __atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED))
    return start_rest(t, eHandle, d, ctxv);
  const uint32_t type = (uint32_t)type64, parent_path = (uint32_t)(pobj >> 44) & 0xFFFFu;
  const cp_cmemo_key k = cp_cmemo_key_of(d, type);
  const cp_cmemo_ent *e = cp_cmemo_find(t, parent_path, type, &k);
  if (!e) return start_rest(t, eHandle, d, ctxv);
  counted_hit_count(t, eHandle, e, t->last_hkey | CP_LEAN_BIT);
  const uint32_t path = (uint32_t)(e->hbits >> 44) & 0xFFFFu;
  api_hooks(t, d, type, path, e->bytes);
  lean_derive(t, d, type, path);
  return NCCL_OK;
}

/* An event of an off call (HS_OFF): no path, no count, no record; its
 * GroupApi goes to the mask control's freeze rules and group count, and
 * takes in the pool's posts as a counted one does (start_counted). */
static __attribute__((noinline)) void start_off(cp_thr *t, void **eHandle, const ncclProfilerEventDescr_v5_t *d,
                                                uint32_t type, cp_pool *pool) {
  *eHandle = (void *)(uintptr_t)pool_handle(pool, CP_PATH_NONE, counted_slot(type) | CP_OFF_SLOT, 0);
  if (type != ncclProfileGroupApi) return;
  group_takes_posts(t, pool);
  if (UNLIKELY(d->groupApi.graphCaptured)) cp_mask_on_graph_capture();
  cp_mask_on_group_start(t->tid);
}

/* No slot (pool released or out of memory): undo the parent link (kc: a
 * KernelCh, whose link may have joined a batch: kc_batch.h), unlock the
 * pool (held on entry), one bad call. */
__attribute__((cold, noinline)) static void start_no_slot(cp_thr *t, cp_pool *pool, int own, cp_pool *ppool,
                                                          const plink *pl, int kc) {
  const int released = pool->released;
  const uint32_t ls = cp_slot_local(pl->slot);
  if (pl->linked && ppool == pool) {
    cp_slot *ps = cp_pool_slot(pool, ls);
    if (ps && ps->gen == pl->gen) cp_pool_unref(pool, ps, ls);
  }
  cp_pool_leave(pool, own);
  if (pl->linked && ppool != pool) release_parent_other(t, ppool, pl->slot, pl->gen, 1, 0, 0, 0, 0, 0, kc);
  if (released) bad(W_AFTER_FINI, "startEvent on a finalized communicator; ignored");
  else bad(W_POOL_FULL, "event pool exhausted (no memory); event not recorded");
}

/* ---- startEvent, every case (cp_core_start below takes the common one) ---- */
__attribute__((noinline)) static ncclResult_t start_general(void *context, void **eHandle,
                                                           const ncclProfilerEventDescr_v5_t *d, int v4) {
  if (UNLIKELY(!eHandle)) { bad(W_NULL_EHANDLE, "startEvent with a NULL eHandle pointer"); return NCCL_OK; }
  *eHandle = NULL;
  if (UNLIKELY(!d)) { bad(W_NULL_DESCR, "startEvent with a NULL descriptor"); return NCCL_OK; }
  if (UNLIKELY(atomic_load_explicit(&cp_hot.stopped, memory_order_relaxed))) {
    bad(W_SHUTDOWN, "NCCL callback after collprof_shutdown(); ignored");
    return NCCL_OK;
  }
  if (UNLIKELY(!valid_type(d->type))) { bad(W_BAD_TYPE, "startEvent with an unknown event type"); return NCCL_OK; }
  const uint32_t type = (uint32_t)d->type;
  cp_thr *t = cp_thr_get();
  const uint64_t ctxv = (uint64_t)(uintptr_t)context;
  const uint64_t pobj = (uint64_t)(uintptr_t)d->parentObj;
  const int mypid = atomic_load_explicit(&cp_hot.pid, memory_order_relaxed);
  cp_comm *comm = ctx_lookup(t, ctxv);
  cp_pool *pool;
  int pxn = 0, scratch = 0;
  cp_handle_fields pf = {0, 0, 0, 0};
  int pdec = pobj && cp_handle_decode(pobj, &pf);
  if (pdec && !(pf.path == CP_PATH_NONE || cp_path_valid_i(pf.path))) pdec = 0;

  if (type == ncclProfileProxyOp && d->proxyOp.pid != mypid) pxn = 1;
  if (LIKELY(comm) && !pxn) {
    if (UNLIKELY(__atomic_load_n(&comm->finalized, __ATOMIC_RELAXED))) {
      bad(W_AFTER_FINI, "startEvent on a finalized communicator; ignored");
      return NCCL_OK;
    }
    pool = t->last_lpool;   /* ctx_lookup: this thread's lane of comm */
  } else if (!pxn && ctxv && ctxv == atomic_load_explicit(&g.scratch_ctx, memory_order_relaxed)) {
    pool = atomic_load_explicit(&g.scratch, memory_order_acquire);
    scratch = 1;
    if (!pool) return NCCL_OK;
  } else if (pxn || type == ncclProfileProxyOp ||
             ((type & (ncclProfileProxyStep | ncclProfileNetPlugin | ncclProfileKernelCh)) &&
              pdec && pf.comm == 0)) {
    pxn = 1;
    comm = NULL;
    pool = atomic_load_explicit(&g.detach, memory_order_acquire);
    if (!pool) { bad(W_NULL_CTX, "proxy event before any communicator init; ignored"); return NCCL_OK; }
  } else {
    if (!ctxv) bad(W_NULL_CTX, "startEvent with a NULL context (failed init?); ignored");
    else bad(W_FOREIGN_CTX, "startEvent with a context collprof did not create; ignored");
    return NCCL_OK;
  }

  /* Path: from the parent handle's path id, never from its slot. */
  uint32_t parent_path;
  cp_pool *ppool = NULL;
  if (!pobj) {
    parent_path = CP_PATH_NONE;
    pdec = 0;
  } else if (pxn && type == ncclProfileProxyOp) {
    parent_path = CP_PATH_PXN;         /* parentObj lives in another process */
    pdec = 0;
  } else if (pdec && (ppool = ((pool->hkey ^ pobj) & CP_HKEY_MASK) == 0 ? pool
                                : remote_pool(t, pf.comm, cp_slot_lane(pf.slot))) != NULL) {
    parent_path = pf.path;   /* its pool: ours, or one not remembered (not this thread's) */
  } else {
    parent_path = CP_PATH_UNKNOWN;
    pdec = 0;
    if (!scratch) cp_inc(&t->unknown_parent, 1);
  }
  /* host sampling and recording off: decided at GroupApi, inherited */
  const int hs = comm && !pxn && !v4;
  if (hs && type == ncclProfileGroupApi && !pobj) hs_decide_once(t);
  if (hs && (pdec ? (pf.gen == 0 && (pobj & CP_OFF_BIT)) : (!pobj && hs_off_root(t, type)))) {
    start_off(t, eHandle, d, type, pool);
    return NCCL_OK;
  }
  if (hs && pdec && pf.gen == 0 && (pf.slot & CP_LEAN_SLOT)) {
    start_lean(t, eHandle, d, type, parent_path, pool, pool->hkey, ctxv);
    return NCCL_OK;
  }
  uint32_t func, dt;
  uint64_t bytes;
  descr_func(t, d, type, &func, &dt, &bytes);
  uint32_t path = scratch ? cp_path_probe(parent_path, type, func) : cp_path_child_t(t, parent_path, type, func);
  if (hs) {
    if (pdec ? (pf.gen == 0 && !untimed_coll(pobj, type)) : (!pobj && hs_counted_root(t, type))) {
      uint32_t xs = pdec ? pf.slot & CP_XSLOTS : hs_root_xslot(t);
      if (UNLIKELY(xs & CP_CLS_SLOT)) xs = (uint32_t)(cls_note(t, type, path, bytes, (uint64_t)xs << 8) >> 8);
      start_counted(t, eHandle, d, type, path, bytes, pool, ctxv, xs);
      return NCCL_OK;
    }
  }

  /* A parent in another pool is linked first, before ours is held (two
   * pools are never held at once): under its lock, or read without it
   * (another thread's lane: link_parent_other). */
  plink pl = {0, 0, 0, 0, 0, 0, 0};
  const int ax = (type & CP_PROXY_TYPES) != 0;
  if (pdec && pf.gen && ppool != pool) link_parent_other(t, ppool, &pf, &pl, type == ncclProfileKernelCh, ax);
  /* A Coll/P2p of a call that ran with KernelCh on holds its slot for its
   * nChannels KernelCh children, which may start long after it stopped
   * (pool.h, cp_pool_hold).  v5: the mask at the GroupApi start; v4 (no
   * API events): the mask now. */
  int kc_call = 0;
  uint32_t hold = 0;
  if ((type == ncclProfileColl || type == ncclProfileP2p) && !scratch && !pxn) {
    kc_call = v4 ? cp_mask_kernelch_on() : t->sampled;
    if (kc_call) {
      hold = kc_hold(d, type);
    }
  }
  const int trace = !scratch && atomic_load_explicit(&cp_hot.trace_on, memory_order_relaxed);
  const uint64_t now = ev_now();
  if (type == ncclProfileGroupApi && g.host_sample < 0 && comm && !pxn && !v4 && !scratch)
    hs_note_start(t, now);
  uint32_t idx;
  const int own = cp_pool_enter(pool, t);
  if (pdec && pf.gen && ppool == pool) link_parent(pool, &pf, &pl, type == ncclProfileKernelCh, ax);
  cp_slot *s = cp_pool_alloc(pool, &idx);
  if (UNLIKELY(!s)) {
    start_no_slot(t, pool, own, ppool, &pl, type == ncclProfileKernelCh);   /* leaves the pool */
    return NCCL_OK;
  }
  cp_slot_set_path(s, path);   /* atomic: read by cp_pool_peek_parent */
  s->type = !pxn && !scratch ? slot_type(t, type) : (uint16_t)type;
  s->start_ns = now;
  s->start_tid = t->tid;
  s->bytes = bytes;
  s->is_pxn = (uint8_t)pxn;
  slot_parent(s, pf.comm, &pl);
  if (pxn) s->origin_pid = type == ncclProfileProxyOp ? d->proxyOp.pid : pl.origin_pid;
  start_gpu_fields(pool, s, idx, hold, type, d, &pl, now, !pxn && !scratch, kc_call);
  start_acls(s, type, bytes, &pl);
  const uint64_t handle = pool_handle(pool, path, idx, s->gen);
  if (trace) start_record(t, s, d, comm, pxn, type, path, mypid, func, dt, now, pobj, handle, ctxv);
  if (!scratch) pool->events++;
  cp_pool_leave(pool, own);
  *eHandle = (void *)(uintptr_t)handle;
  if (scratch) return NCCL_OK;

  cp_inc(&t->events, 1);
  if (pxn) cp_inc(&t->events_pxn, 1);
  start_hooks(t, d, type, path, handle, ctxv, bytes, comm ? comm->index : 0);
  if (v4 && (type == ncclProfileColl || type == ncclProfileP2p)) cp_mask_on_api_call(path, kc_call, bytes);
  return NCCL_OK;
}

/* start_fast's recorded event, the parent's pool ppool: this lane's
 * (start_fast: ppool == pool, a constant there, so its code is as if
 * written for that alone), or another lane's (start_kch_other). */
static inline __attribute__((always_inline)) int start_recorded(cp_thr *t, void **eHandle,
                                                                const ncclProfilerEventDescr_v5_t *d, uint64_t ctxv,
                                                                cp_pool *pool, cp_pool *ppool, uint32_t type,
                                                                uint64_t pobj, uint32_t parent_path, int mypid) {
  CP_PH(CP_PH_S_ENTRY, 1);
  uint32_t func, dt, path;
  uint64_t bytes;
  /* a Coll's lookups from the memo (coll_memo.h), else made and remembered */
  cp_rmemo_ent *rm = type == ncclProfileColl ? cp_rmemo_slot(t, parent_path, d) : NULL;
  const int memo = rm && LIKELY(cp_rmemo_holds(rm, parent_path, d));
  if (memo) {
    func = rm->func_id;
    dt = rm->dt_id;
    bytes = rm->bytes;
  } else {
    descr_func(t, d, type, &func, &dt, &bytes);
  }
  const uint32_t hold = (type & (ncclProfileColl | ncclProfileP2p)) && t->sampled ? kc_hold(d, type) : 0;
  CP_PH(CP_PH_S_DESCR, 0);
  if (memo) {
    path = rm->path;
  } else {
    path = cp_path_child_t(t, parent_path, type, func);
    if (rm && path < CP_PATH_PXN) cp_rmemo_fill(t, rm, parent_path, d, path, func, dt, bytes);
  }
  CP_PH(CP_PH_S_PATH, 0);
  cp_comm *comm = t->last_comm;   /* a recorded event's only: not on line 0 */
  const int trace = atomic_load_explicit(&cp_hot.trace_on, memory_order_relaxed);
  const uint64_t now = ev_now();
  CP_PH(CP_PH_S_CLOCK, 0);
  if (UNLIKELY(type == ncclProfileGroupApi) && g.host_sample < 0) hs_note_start(t, now);
  plink pl = {0, 0, 0, 0, 0, 0, 0};
  uint32_t idx;
  const cp_handle_fields pf = {parent_path, pool->comm_index, (uint32_t)(pobj >> 8) & 0xFFFFFFu,
                               (uint32_t)pobj & 0xFFu};
  /* another lane's parent is linked before ours is held (start_general) */
  if (UNLIKELY(ppool != pool)) link_parent_other(t, ppool, &pf, &pl, 1, 0);
  const int own = cp_pool_enter(pool, t);
  if ((pobj & 0xFFu) && ppool == pool)   /* a recorded parent (a counted one: untimed_coll) */
    link_parent(pool, &pf, &pl, type == ncclProfileKernelCh, (type & CP_PROXY_TYPES) != 0);
  CP_PH(CP_PH_S_ENTER, 0);
  cp_slot *s = cp_pool_alloc(pool, &idx);
  if (UNLIKELY(!s)) {
    *eHandle = NULL;
    start_no_slot(t, pool, own, ppool, &pl, type == ncclProfileKernelCh);   /* leaves the pool */
    return 1;
  }
  cp_slot_set_path(s, path);   /* atomic: read by cp_pool_peek_parent */
  s->type = slot_type(t, type);
  s->start_ns = now;
  s->start_tid = t->tid;
  s->bytes = bytes;
  slot_parent(s, pool->comm_index, &pl);
  start_gpu_fields(pool, s, idx, hold, type, d, &pl, now, 1, t->sampled);
  start_acls(s, type, bytes, &pl);
  const uint64_t handle = pool_handle(pool, path, idx, s->gen);
  CP_PH(CP_PH_S_SLOT, 0);
  if (trace) {
    /* start_record's compact case inlined: the call passed fourteen
     * values, eight of them on the stack.  Callgrind
     * (test/bench/instr_per_event.sh): about 40 fewer instructions per
     * event with the trace on, 8 more with it off. */
    const int compact = memo ? ctxv == comm->ctx_value &&
                                   start_record_cm(t, &s->erec, d, rm, pool->comm_index, now, pobj, handle)
                             : path < CP_PATH_PXN && ctxv == comm->ctx_value &&
                                   start_record_c(t, &s->erec, d, type, path, pool->comm_index, dt, now, pobj, handle);
    if (!LIKELY(compact)) start_record(t, s, d, comm, 0, type, path, mypid, func, dt, now, pobj, handle, ctxv);
  }
  CP_PH(CP_PH_S_TRACE, 0);
  pool->events++;
  cp_pool_leave(pool, own);
  *eHandle = (void *)(uintptr_t)handle;
  cp_inc(&t->events, 1);
  CP_PH(CP_PH_S_LEAVE, 0);
  start_hooks(t, d, type, path, handle, ctxv, bytes, pool->comm_index);
  CP_PH(CP_PH_S_HOOKS, 0);
  return 1;
}

/* A KernelCh whose recorded Coll/P2p is in another lane of this
 * communicator: NCCL's proxy thread's every KernelCh.  Linked as
 * start_general would (link_parent_other, before this lane is held),
 * without its context and pool lookups and start_general's other cases:
 * 1,406 instructions a KernelCh on that thread before, 1,215 after
 * (callgrind, collprof-bench proxy mode, 24 channels, trace on, the
 * driver's 174 included).  Returns 0, having changed nothing, where
 * start_general must decide (the parent's lane not made, its path not
 * valid). */
static __attribute__((noinline)) int start_kch_other(cp_thr *t, void **eHandle, const ncclProfilerEventDescr_v5_t *d,
                                                     uint64_t ctxv, cp_pool *pool, uint64_t pobj, int mypid) {
  const uint32_t parent_path = (uint32_t)(pobj >> 44) & 0xFFFFu;
  if (parent_path != CP_PATH_NONE && !cp_path_valid_i(parent_path)) return 0;
  cp_pool *ppool = remote_pool(t, (uint32_t)(pobj >> 32) & 0xFFFu, cp_slot_lane((uint32_t)(pobj >> 8) & 0xFFFFFFu));
  if (!ppool) return 0;
  return start_recorded(t, eHandle, d, ctxv, pool, ppool, ncclProfileKernelCh, pobj, parent_path, mypid);
}

/* ---- startEvent, the common case ----
 * A v5 event on the communicator this thread decoded last (its context is
 * the cached one), whose parent is none or a handle of the same pool, not
 * a foreign ProxyOp; and a KernelCh whose Coll/P2p is in another lane of
 * that communicator (start_kch_other).  That is nearly every event NCCL
 * sends; everything else (PXN, other pools, bad arguments, v4) goes to
 * start_general, which is the reference: this path must do exactly what
 * it would.  Returns 0, having changed nothing, to hand the event over.
 * Most counted events never come here (start_counted_child takes them):
 * what does is a GroupApi, a recorded event, or a counted one the memo
 * did not hold. */
static inline __attribute__((always_inline)) int start_fast(cp_thr *t, void **eHandle,
                                                            const ncclProfilerEventDescr_v5_t *d, uint64_t ctxv) {
  cp_pool *pool = t->last_lpool;
  const uint64_t type64 = d->type;
  const uint64_t pobj = (uint64_t)(uintptr_t)d->parentObj;
  /* the lane's finalized flag, set with the communicator's (fini_common),
   * read only once some communicator was (pool_finalized): the
   * communicator's line and, for a counted event, the pool's stay cold */
  if (UNLIKELY((!valid_type(type64)) | pool_finalized(pool) | atomic_load_explicit(&cp_hot.stopped, memory_order_relaxed)))
    return 0;
  /* the pool's handle bits from the thread's line where it is the pool
   * cached there (nearly always): a counted start then reads no line of
   * its pool but at a GroupApi */
  const uint64_t hkey = LIKELY(t->last_pool == pool) ? t->last_hkey : pool->hkey;
  const uint32_t type = (uint32_t)type64;
  const int mypid = atomic_load_explicit(&cp_hot.pid, memory_order_relaxed);
  if (UNLIKELY(type == ncclProfileProxyOp) && d->proxyOp.pid != mypid) return 0;
  uint32_t parent_path = CP_PATH_NONE;
  int counted;   /* host sampling: decided at GroupApi, inherited */
  uint64_t unt = 0;   /* CP_UNT_BIT: counted, of an untimed call */
  if (pobj) {
    if (UNLIKELY(((pobj ^ hkey) & CP_HKEY_MASK) != 0)) {
      /* Not this lane's: a KernelCh whose Coll/P2p is in another lane of
       * this communicator goes on here (start_kch_other), anything else
       * to start_general. */
      if (type64 != ncclProfileKernelCh || (pobj & 0xFFu) == 0 || ((pobj ^ hkey) & CP_HCOMM_MASK) != 0) return 0;
      return start_kch_other(t, eHandle, d, ctxv, pool, pobj, mypid);
    }
    parent_path = (uint32_t)(pobj >> 44) & 0xFFFFu;
    if (parent_path != CP_PATH_NONE && !cp_path_valid_i(parent_path)) return 0;
    counted = (pobj & 0xFFu) == 0;
    if (UNLIKELY(counted && (pobj & CP_OFF_BIT))) { start_off(t, eHandle, d, type, pool); return 1; }
    if (UNLIKELY(counted && (pobj & CP_UNT_BIT))) {
      unt = CP_UNT_BIT;
      if (untimed_coll(pobj, type)) counted = 0;
    }
    if (UNLIKELY(counted && (pobj & CP_LEAN_BIT))) {
      start_lean(t, eHandle, d, type, parent_path, pool, hkey, ctxv);
      return 1;
    }
    if (UNLIKELY(counted && (pobj & CP_CLS_BIT))) unt = pobj & (CP_CLS_BIT | CP_ACLS_BITS);
  } else {
    if (type == ncclProfileGroupApi) hs_decide_once(t);
    counted = hs_counted_root(t, type);
    if (UNLIKELY(hs_off_root(t, type))) { start_off(t, eHandle, d, type, pool); return 1; }
    unt = (uint64_t)hs_root_xslot(t) << 8;
  }
  if (counted) {
    start_counted_fast(t, eHandle, d, type, parent_path, pool, hkey | unt, ctxv);
    return 1;
  }
  return start_recorded(t, eHandle, d, ctxv, pool, pool, type, pobj, parent_path, mypid);
}

/* start_fast, else start_general: where start_counted_child hands over. */
static __attribute__((noinline)) ncclResult_t start_rest(cp_thr *t, void **eHandle,
                                                         const ncclProfilerEventDescr_v5_t *d, uint64_t ctxv) {
  if (start_fast(t, eHandle, d, ctxv)) return NCCL_OK;
  return start_general((void *)(uintptr_t)ctxv, eHandle, d, 0);
}

/* ---- startEvent, the commonest case in few lines of code ----
 * Under host sampling most events are children of a counted parent (a
 * handle of generation 0 of this thread's lane: CollApi, KernelLaunch,
 * Coll, a ProxyOp below it) or the Group of a counted call, and in a loop
 * the memo holds their lookup.  An untimed call's (KernelCh on, not due
 * for timing: every call with COLLPROF_GPU_SAMPLE=1) come here too, their
 * handles carrying CP_UNT_BIT on, but for its Coll/P2p, which are
 * recorded (untimed_coll): before, they all went start_fast's way, about
 * 400 of the 3,300 instructions such a call costs the application thread
 * (collprof-bench proxy mode, mask 4095, 24 channels, callgrind).
 * That case alone, checked as start_fast checks it, in a function of its
 * own: its code is a few cache lines, where start_fast's (which handles it
 * too) spans two dozen, each one a miss once NCCL's own code has run
 * between two callbacks (test/bench/lines_per_event.sh).  cp_core_start
 * sends only what may be that case here, a GroupApi to start_group_api
 * (below), and anything else, with nothing changed, goes on to start_fast
 * and start_general (start_rest); all by tail calls, so that cp_core_start
 * keeps no register across a call (which cost it 40 instructions a start:
 * test/bench/instr_per_event.sh). */
static __attribute__((noinline)) ncclResult_t start_counted_child(cp_thr *t, void **eHandle,
                                                                  const ncclProfilerEventDescr_v5_t *d,
                                                                  uint64_t ctxv) {
  /* No full test of the type's and the parent path's validity here: the
   * memo holds only valid ones (filled by the long way, which tests them),
   * so an invalid one finds no entry and goes there (start_rest).  Only
   * the type's range is tested (1..KernelLaunch: the memo's set index
   * takes its lowest bit). */
  const uint64_t pobj = (uint64_t)(uintptr_t)d->parentObj;
  const uint64_t type64 = d->type;
  cp_pool *pool = t->last_lpool;
  if (t->last_pool != pool || type64 - 1 >= ncclProfileKernelLaunch) return start_rest(t, eHandle, d, ctxv);
  const uint32_t type = (uint32_t)type64;
  uint32_t parent_path = CP_PATH_NONE;
  uint64_t unt;   /* CP_UNT_BIT: an untimed call's, inherited */
  if (pobj) {
    if ((pobj & (0xFFu | CP_OFF_BIT | CP_LEAN_BIT | CP_CLS_BIT)) != 0 ||
        ((pobj ^ t->last_hkey) & CP_HKEY_MASK) != 0 || untimed_coll(pobj, type))
      return start_rest(t, eHandle, d, ctxv);
    parent_path = (uint32_t)(pobj >> 44) & 0xFFFFu;
    unt = pobj & CP_UNT_BIT;
  } else if (type != ncclProfileGroup || (t->hs_mode != HS_COUNTED && t->hs_mode != HS_UNTIMED)) {
    return start_rest(t, eHandle, d, ctxv);   /* a Group of a call not counted */
  } else {
    unt = t->hs_mode == HS_UNTIMED ? CP_UNT_BIT : 0;
  }
  if (UNLIKELY(pool_finalized(pool) | atomic_load_explicit(&cp_hot.stopped, memory_order_relaxed)) ||
      (type == ncclProfileProxyOp && d->proxyOp.pid != atomic_load_explicit(&cp_hot.pid, memory_order_relaxed)))
    return start_rest(t, eHandle, d, ctxv);
  const cp_cmemo_key k = cp_cmemo_key_of(d, type);
  const cp_cmemo_ent *e = cp_cmemo_find(t, parent_path, type, &k);
  if (!e) return start_rest(t, eHandle, d, ctxv);
  const uint64_t handle = counted_hit_count(t, eHandle, e, t->last_hkey | unt);
  if (LIKELY(counted_hooks_idle(t, type))) {
    /* counted_drop_handle's case: idle, so no capture and no launch open */
    if (type & (ncclProfileKernelLaunch | ncclProfileGroup)) *eHandle = NULL;
    return NCCL_OK;
  }
  if ((type & (ncclProfileCollApi | ncclProfileP2pApi)) && !__atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED)) {
    api_hooks(t, d, type, (uint32_t)(e->hbits >> 44) & 0xFFFFu, e->bytes);   /* every counted call's one */
    return NCCL_OK;
  }
  return counted_hooks_call(t, d, type, e, handle, ctxv);
}

/* A GroupApi of this thread's lane, the one start of each API call: the
 * call's host-sampling decision (hs_decide), then for a counted call whose
 * GroupApi the memo holds, the count and hooks here, in a function of a
 * few lines as start_counted_child (start_fast's way spans two dozen).
 * Anything else goes on to start_rest, told the decision is made. */
static __attribute__((noinline)) ncclResult_t start_group_api(cp_thr *t, void **eHandle,
                                                              const ncclProfilerEventDescr_v5_t *d, uint64_t ctxv) {
  cp_pool *pool = t->last_lpool;
  if (t->last_pool != pool ||
      UNLIKELY(pool_finalized(pool) | atomic_load_explicit(&cp_hot.stopped, memory_order_relaxed)))
    return start_rest(t, eHandle, d, ctxv);
  hs_decide(t);
  if (LIKELY(t->hs_mode == HS_COUNTED || t->hs_mode == HS_UNTIMED)) {
    const cp_cmemo_key k = {NULL, NULL, 0};
    const cp_cmemo_ent *e = cp_cmemo_find(t, CP_PATH_NONE, ncclProfileGroupApi, &k);
    if (LIKELY(e != NULL)) {
      group_takes_posts(t, pool);
      counted_hit(t, eHandle, d, ncclProfileGroupApi, e, t->last_hkey | (uint64_t)hs_root_xslot(t) << 8, ctxv);
      return NCCL_OK;
    }
  }
  t->hs_predecided = 1;
  return start_rest(t, eHandle, d, ctxv);
}

ncclResult_t cp_core_start(void *context, void **eHandle, const ncclProfilerEventDescr_v5_t *d, int v4) {
  CP_PH_BEGIN();
  cp_thr *t = cp_tls_thr;
  const uint64_t ctxv = (uint64_t)(uintptr_t)context;
  if (LIKELY(eHandle && d && t && !v4 && ctxv && ctxv == t->last_ctx)) {
    /* a counted parent's child, or a Group (of a counted call or not):
     * the short way first; a recorded event straight on */
    const uint64_t pobj = (uint64_t)(uintptr_t)d->parentObj;
    if (pobj ? (pobj & (0xFFu | CP_OFF_BIT | CP_LEAN_BIT | CP_CLS_BIT)) == 0 : d->type == ncclProfileGroup)
      return start_counted_child(t, eHandle, d, ctxv);
    if (!pobj && d->type == ncclProfileGroupApi) return start_group_api(t, eHandle, d, ctxv);
    if ((pobj & (0xFFu | CP_OFF_BIT | CP_UNT_BIT | CP_LEAN_BIT | CP_CLS_BIT)) == CP_LEAN_BIT)
      return start_lean_fast(t, eHandle, d, ctxv);
    return start_rest(t, eHandle, d, ctxv);
  }
  return start_general(context, eHandle, d, v4);
}

/* NCCL keeps 64 timestamp slots per channel, indexed by the channel's
 * work counter; the proxy reads a KernelCh's slot late.  Once more than
 * this many later KernelCh-on Coll/P2p started on the communicator, one of
 * them may have rewritten the slot (a Coll is one work item per channel, a
 * P2p at most one: half of 64 leaves room for two per call), and the times
 * NCCL hands over may be another item's.  mask_control.c keeps this from
 * happening for N >= 2; with N = 1 it does, whenever the proxy falls
 * behind.  The count is read as published, in batches (pool.h,
 * CP_KC_OPS_BATCH), so a span goes at 25-32 later starts: never after. */
#define CP_KC_SLOT_TRUST 32u

/* What a stopping child gives its parent's slot: child time while the
 * parent is live, its GPU span (KernelCh) while the generation matches.
 * Returns 0 when the KernelCh span failed the slot check (not to be used
 * for the KernelCh's own path either). */
static inline int kc_untrusted(const cp_pool *pp, uint64_t kc_seq) {
  const uint64_t r = cp_replay_kc_ops;   /* a recorded stop: 1 + the count when NCCL made it */
  const uint64_t pub = LIKELY(!r) ? __atomic_load_n(&pp->kc_ops, __ATOMIC_RELAXED) : r - 1;
  /* kc_ops is published in batches (pool.h, CP_KC_OPS_BATCH): the count
   * may be up to CP_KC_OPS_BATCH - 1 above it, so a sample goes once that
   * many more might have started (at 25-32 later starts, not exactly 32),
   * never later.  Signed: this Coll's own start may not be published yet. */
  return kc_seq && (int64_t)(pub + (CP_KC_OPS_BATCH - 1) - kc_seq) >= (int64_t)CP_KC_SLOT_TRUST;
}
static inline __attribute__((always_inline)) int parent_update(cp_pool *pp, uint32_t pslot, uint32_t pgen,
                                                               int took_ref, uint64_t dur, int kch, uint64_t gs,
                                                               uint64_t ge) {
  const uint32_t ls = cp_slot_local(pslot);
  cp_slot *ps = cp_pool_slot(pp, ls);
  if (!ps || ps->gen != pgen) return 1;
  const int bad = kch && kc_untrusted(pp, ps->kc_seq);
  cp_pool_parent_done(pp, ps, ls, took_ref != 0, dur, kch != 0, bad, gs, ge);
  return !bad;
}

/* A parent in another pool (after ours was left): the slot-reuse check
 * here, on a lock-free read of the parent's kc_seq, and the rest held or
 * posted (release_parent_other). */
__attribute__((noinline)) static int parent_update_other(cp_thr *t, uint32_t pcomm, uint32_t pslot, uint32_t pgen,
                                                         int took_ref, uint64_t dur, int kch, uint64_t gs,
                                                         uint64_t ge, int is_kc) {
  cp_pool *pp = remote_pool(t, pcomm, cp_slot_lane(pslot));   /* not this thread's */
  if (!pp) return 1;
  const int bad = kch && kc_untrusted(pp, cp_pool_peek_kc_seq(pp, cp_slot_local(pslot), pgen));
  release_parent_other(t, pp, pslot, pgen, took_ref, dur, kch, bad, gs, ge, is_kc);
  return !bad;
}

/* A KernelCh of a kc_span parent stopped: its span into the gathering,
 * the slot-reuse check on the kept kc_seq; the parent's span accounted
 * when its kc_n channels stopped. */
__attribute__((noinline)) static int kc_span_stop(cp_thr *t, uint32_t pcomm, uint32_t pslot, uint32_t pgen, int kch,
                                                  uint64_t gs, uint64_t ge) {
  cp_pool *pp = remote_pool(t, pcomm, cp_slot_lane(pslot));
  struct cp_kc_span *e = pp ? kc_span_find(t, pp, cp_slot_local(pslot), pgen, ~0u) : NULL;
  if (!e) return 1;
  const int bad = kch && kc_untrusted(pp, e->kc_seq);
  if (bad) e->bad = 1;
  else if (kch) {
    if (e->nkch == 0 || gs < e->gs) e->gs = gs;
    if (e->nkch == 0 || ge > e->ge) e->ge = ge;
    e->nkch++;
  }
  if (++e->stopped >= e->kc_n && e->stopped >= e->started) kc_span_account(t, e);
  return !bad;
}

/* Trace on: the record goes straight from the slot into this thread's ring
 * (pool lock held).  stop_record_any takes every case; stop_record, inlined
 * into the stop, only a compact record with room at the ring's head: a
 * copy without a call, so the stop saves no more registers than with the
 * trace off. */
__attribute__((noinline)) static void stop_record_any(const cp_thr *t, const cp_slot *s, uint64_t now) {
  const int kch = s->type == ncclProfileKernelCh;
  const uint64_t gpu_stop = __atomic_load_n(&s->has_gpu_stop, __ATOMIC_RELAXED)
                                ? __atomic_load_n(&s->gpu_stop, __ATOMIC_RELAXED) : 0;
  if (LIKELY(s->rec.kind == CP_REC_EVENT_C)) cp_trace_put_stopped_c(&s->erec, now, kch, gpu_stop);
  else cp_trace_put_stopped_i(&s->rec, now, t->tid, kch, gpu_stop);
}
static inline __attribute__((always_inline)) void stop_record(const cp_thr *t, const cp_slot *s, uint64_t now) {
  cp_unit *u;
  if (LIKELY(s->rec.kind == CP_REC_EVENT_C) && s->type != ncclProfileKernelCh &&
      LIKELY((u = cp_trace_reserve_fast(2)) != NULL)) {
    cp_erec *o = (cp_erec *)(void *)u;
    memcpy(o, &s->erec, sizeof *o);
    o->stop_ns = now;
    cp_trace_commit(2);
    return;
  }
  stop_record_any(t, s, now);
}

/* ---- stop and state: finding the handle's pool ----
 * handle_pool_checked: every check, one warning for a bad handle (cb names
 * the callback in it); NULL when the call is to be ignored.  fast_pool: the
 * common case only (the pool this thread used last, not finalized), NULL
 * to take the checked way. */
__attribute__((cold, noinline)) static void bad_handle(int kind, const char *cb, const char *what) {
  char line[160];
  snprintf(line, sizeof line, "%s %s", cb, what);
  bad(kind, line);
}

static cp_pool *handle_pool_checked(uint64_t h, cp_handle_fields *f, cp_thr **tp, const char *cb) {
  if (UNLIKELY(!h)) { bad_handle(W_NULL_HANDLE, cb, "with a NULL handle"); return NULL; }
  if (UNLIKELY(!cp_handle_decode(h, f))) {
    bad_handle(W_FOREIGN_HANDLE, cb, "with a handle collprof did not create");
    return NULL;
  }
  if (UNLIKELY(atomic_load_explicit(&cp_hot.stopped, memory_order_relaxed))) {
    bad(W_SHUTDOWN, "NCCL callback after collprof_shutdown(); ignored");
    return NULL;
  }
  cp_thr *t = *tp = cp_thr_get();
  cp_pool *pool = pool_lookup(t, f->comm, cp_slot_lane(f->slot));
  if (UNLIKELY(!pool)) { bad_handle(W_FOREIGN_HANDLE, cb, "with a handle collprof did not create"); return NULL; }
  if (UNLIKELY(__atomic_load_n(&pool->finalized, __ATOMIC_RELAXED))) {
    bad_handle(W_AFTER_FINI, cb, "after its communicator was finalized; ignored");
    return NULL;
  }
  return pool;
}

static inline cp_pool *fast_pool(const cp_thr *t, uint64_t h) {
  if (LIKELY(t && handle_in_last_pool(t, h))) {
    cp_pool *pool = t->last_pool;
    if (LIKELY(!(pool_finalized(pool) | atomic_load_explicit(&cp_hot.stopped, memory_order_relaxed))))
      return pool;
  }
  return NULL;
}

/* ---- stopEvent ----
 * stop_body: everything after the pool was found and checked (scratch: the
 * self-cost pool, a compile-time 0 on the common path).  cp_core_stop
 * takes the common case (a handle of the pool this thread used last, not
 * finalized), stop_general every other, with the full checks. */
static inline __attribute__((always_inline)) ncclResult_t stop_body(cp_thr *t, cp_pool *pool, const cp_handle_fields *pf,
                                                                   uint64_t h, int scratch);

/* The stop of a counted event (host sampling): nothing to time or free,
 * only the hooks a stop runs, found by the type its handle carries
 * (counted_slot): no path-table entry to read. */
static ncclResult_t stop_counted(cp_thr *t, uint64_t h) {
  if (UNLIKELY(__atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED)) && !(h & CP_OFF_BIT)) cp_capture_stop(h);
  const uint32_t type = counted_type(h);
  if (type == ncclProfileGroupApi) {
    cp_mask_on_group_stop(lean_next_ok(t));
    if (UNLIKELY(t->lt_cur != 0)) cp_lt_group_stop(t, ev_now());
  } else if (type == ncclProfileKernelLaunch) cp_lt_launch_stop(t);
  return NCCL_OK;
}

__attribute__((noinline)) static ncclResult_t stop_general(void *eHandle) {
  const uint64_t h = (uint64_t)(uintptr_t)eHandle;
  cp_handle_fields f;
  cp_thr *t;
  cp_pool *pool = handle_pool_checked(h, &f, &t, "stopEvent");
  if (!pool) return NCCL_OK;
  if (f.gen == 0) return stop_counted(t, h);
  return stop_body(t, pool, &f, h, pool->scratch);
}

static inline __attribute__((always_inline)) ncclResult_t stop_body(cp_thr *t, cp_pool *pool, const cp_handle_fields *pf,
                                                                   uint64_t h, int scratch) {
  const cp_handle_fields f = *pf;
  if (!scratch) CP_PH(CP_PH_T_ENTRY, 1);
  const int trace = !scratch && atomic_load_explicit(&cp_hot.trace_on, memory_order_relaxed);
  const uint64_t now = ev_now();
  if (!scratch) CP_PH(CP_PH_T_CLOCK, 0);
  const uint32_t ls = cp_slot_local(f.slot);
  const int own = cp_pool_enter(pool, t);
  cp_slot *s = cp_pool_slot(pool, ls);
  if (UNLIKELY(!s || cp_slot_key(s) != cp_handle_key(h))) {
    const int released = pool->released, twice = s && cp_slot_key(s) == (cp_handle_key(h) & ~CP_KEY_LIVE);
    cp_pool_leave(pool, own);
    /* by the handle's path: the old slot may have been handed out again */
    const int kc_restop = !released && kc_path(f.path);
    if (released) bad(W_AFTER_FINI, "stopEvent after its communicator was finalized; ignored");
    else if (kc_restop) {
      if (!scratch) cp_mask_kc_lost();
      bad_event(W_KC_RESTOP, kc_restop_what, h, f.path, t);
    } else if (api_restop(f.path)) {
      /* NCCL's kept API handle, stopped again (api_restop) */
    } else if (twice) bad_event(W_DOUBLE_STOP, "stopEvent twice on one event", h, f.path, t);
    else bad(W_STALE_HANDLE, "stopEvent with a stale or invalid handle; ignored");
    return NCCL_OK;
  }
  const uint64_t dur = now > s->start_ns ? now - s->start_ns : 0;
  const uint64_t self = dur > s->child_ns ? dur - s->child_ns : 0;
  const uint32_t stype = s->type, path = s->path, type = stype & CP_SLOT_TYPE_BITS;
  const int untimed = (stype & CP_SLOT_UNTIMED) != 0;
  const unsigned wlg = (stype >> CP_SLOT_WLG_SHIFT) & 7u;
  const uint64_t bytes = s->bytes;
  /* The slot's second line only for a KernelCh: other events never read it
   * at stop (nor write it after their start). */
  int kch = 0;
  uint64_t gs = 0, ge = 0;
  uint32_t kc_epoch = 0;
  if (UNLIKELY(type == ncclProfileKernelCh)) {
    gs = s->gpu_start;
    /* atomic as state_kc_stop stores them (lock-free): a misbehaving host
     * may send the state from another thread while this stop runs */
    ge = __atomic_load_n(&s->gpu_stop, __ATOMIC_RELAXED);
    kch = __atomic_load_n(&s->has_gpu_stop, __ATOMIC_RELAXED) && ge >= gs;
    kc_epoch = s->kc_epoch;
  }
  /* a proxy event's call class, for the lean estimate (lean_estimate.h) */
  const uint32_t acls = UNLIKELY(type & CP_PROXY_TYPES) ? __atomic_load_n(&s->acls, __ATOMIC_RELAXED) : 0;
  int kch_ok = 1;
  const int plinked = s->parent_linked, took_ref = s->took_ref;
  const uint32_t pcomm = s->parent_comm, pslot = s->parent_slot, pgen = s->parent_gen;
  /* the parent in this pool: same communicator and lane */
  const int same = pcomm == f.comm && ((pslot ^ f.slot) >> CP_LOCAL_BITS) == 0;
  if (!scratch) CP_PH(CP_PH_T_ENTER, 0);
  if (plinked == 1 && same) kch_ok = parent_update(pool, pslot, pgen, took_ref, dur, kch, gs, ge);
  if (!scratch) CP_PH(CP_PH_T_PARENT, 0);
  if (trace) stop_record(t, s, now);
  if (!scratch) CP_PH(CP_PH_T_TRACE, 0);
  cp_pool_release(pool, s, ls);
  cp_pool_leave(pool, own);
  if (UNLIKELY(plinked == 1 && !same))
    kch_ok = parent_update_other(t, pcomm, pslot, pgen, took_ref, dur, kch, gs, ge, type == ncclProfileKernelCh);
  else if (UNLIKELY(plinked == 2))
    kch_ok = kc_span_stop(t, pcomm, pslot, pgen, kch, gs, ge);
  if (UNLIKELY(kc_epoch)) cp_mask_kc_done(kc_epoch);
  if (UNLIKELY(!kch_ok)) cp_affinity_kc_behind(CP_KC_SLOT_TRUST - CP_KC_OPS_BATCH);   /* at least 25 later: kc_untrusted */
  if (!scratch) CP_PH(CP_PH_T_RELEASE, 0);
  if (UNLIKELY(scratch)) {
    static __thread cp_prof_ent sink;   /* same work, nothing recorded */
    cp_prof_ent *e = &sink;
    e->calls++; e->total += dur; e->self += self; e->bytes += bytes;
    if (dur > e->max) e->max = dur;
    return NCCL_OK;
  }
  if (LIKELY(path != CP_PATH_NONE)) {
    if (LIKELY(!untimed)) cp_profile_stop_t(t, path, dur, self, bytes, wlg);
    else {   /* a recorded, untimed call */
      cp_prof_ent *pe = cp_prof_ent_get(t, path);
      if (pe && cp_profile_count_e(pe, bytes)) hs_ask(t, pe);
    }
    if (UNLIKELY(kch) && kch_ok) cp_profile_gpu_t(t, path, ge - gs, 0);
    if (UNLIKELY(acls)) cp_profile_acls_t(t, path, acls - 1);
    else if (type & (ncclProfileColl | ncclProfileP2p)) cp_profile_seen_t(t, path, bytes);
  }
  CP_PH(CP_PH_T_PROFILE, 0);
  if (UNLIKELY(__atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED))) cp_capture_stop(h);
  if (type == ncclProfileGroupApi) {
    cp_mask_on_group_stop(lean_next_ok(t));   /* may switch KernelCh, or go lean */
    cp_lt_group_stop(t, now);
  }
  else if (type == ncclProfileKernelLaunch) cp_lt_launch_stop(t);
  CP_PH(CP_PH_T_HOOKS, 0);
  return NCCL_OK;
}

ncclResult_t cp_core_stop(void *eHandle) {
  CP_PH_BEGIN();
  const uint64_t h = (uint64_t)(uintptr_t)eHandle;
  cp_thr *t = cp_tls_thr;
  cp_pool *pool = fast_pool(t, h);
  if (LIKELY(pool != NULL)) {
    if (UNLIKELY((h & 0xFFu) == 0)) return stop_counted(t, h);
    const cp_handle_fields f = cp_handle_fields_of(h);
    return stop_body(t, pool, &f, h, 0);
  }
  return stop_general(eHandle);
}

/* ---- recordEventState ---- */
/* What a state's argument is, by state number: 1 transSize, 2
 * appendedProxyOps, 3 pTimer (gpuStop), 0 other (data, not written). */
/* Two bits per state in one constant, not a table: a table is one more
 * cache line each state record finds cold (hot.h says why that counts). */
#define STATE_KIND_BITS                                                                        \
  ((1ull << 16) | (1ull << 18) | (1ull << 20) | (1ull << 22) | (1ull << 24) | (1ull << 40) |    \
   (2ull << 36) | (3ull << 44))
static inline uint8_t state_kind_of(int st) { return (uint8_t)((STATE_KIND_BITS >> (2 * st)) & 3); }
_Static_assert(((STATE_KIND_BITS >> 16) & 3) == 1 && ((STATE_KIND_BITS >> 40) & 3) == 1 &&
                   ((STATE_KIND_BITS >> 36) & 3) == 2 && ((STATE_KIND_BITS >> 44) & 3) == 3,
               "states 8-12 and 20 transSize, 18 appendedProxyOps, 22 pTimer");
static inline int state_arg_kind(int st) {
  const int k = (unsigned)st < 32 ? state_kind_of(st) : 0;
  return k ? k : 4;                 /* 4: other (not written) */
}

/* The trace record and the capture line of a state (trace or capture on). */
__attribute__((noinline)) static void state_record(cp_thr *t, uint64_t h, uint32_t fcomm, int eState,
                                                   const ncclProfilerEventStateArgs_v5_t *a, int pxn) {
  const int capture = __atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED);
  int kind = a ? state_arg_kind(eState) : 0;
  uint64_t arg = 0;
  if (a) {
    if (kind == 1) arg = a->transSize;
    else if (kind == 2) arg = (uint64_t)(int64_t)a->appendedProxyOps;
    else if (kind == 3) arg = a->pTimer;
    else arg = (uint64_t)(uintptr_t)a->data;
  }
  if (atomic_load_explicit(&cp_hot.trace_on, memory_order_relaxed)) {
    const uint64_t now = ev_now();   /* only the trace needs the time */
    if (LIKELY(eState >= 0 && eState < 256)) {
      const cp_srec r = {CP_REC_STATE_C, (uint8_t)((kind == 4 ? 0 : kind) | (pxn ? 8 : 0)), 0,
                         (uint8_t)eState, t->tid, h, now, arg};
      cp_trace_put_state_i(&r);   /* 32 bytes, expanded by the writer */
    } else {
      cp_rec r;
      memset(&r, 0, sizeof r);
      r.kind = CP_REC_STATE;
      r.is_pxn = (uint8_t)pxn;
      r.state_arg_kind = (uint8_t)(kind == 4 ? 0 : kind);
      r.path = (uint32_t)eState;
      const cp_comm *c = pxn ? NULL : cp_registry_get(fcomm);
      r.rank = c ? c->nccl_rank : -1;
      r.comm = c ? c->index : 0;
      r.pid = atomic_load_explicit(&cp_hot.pid, memory_order_relaxed);
      r.start_tid = r.stop_tid = t->tid;
      r.start_ns = r.stop_ns = now;
      r.event_addr = h;
      r.d.state.arg = arg;
      cp_trace_put(&r);
    }
  }
  if (UNLIKELY(capture)) cp_capture_state(h, eState, kind, arg);
}

/* state_body: after the pool was found and checked; cp_core_state takes
 * the common case as cp_core_stop does, state_general every other. */
static inline __attribute__((always_inline)) ncclResult_t state_body(cp_thr *t, cp_pool *pool, const cp_handle_fields *pf,
                                                                    uint64_t h, int eState,
                                                                    const ncclProfilerEventStateArgs_v5_t *a, int scratch);

/* A state of a counted event (host sampling): counted on its path, not
 * traced. */
static inline __attribute__((always_inline)) void state_count(cp_thr *t, uint64_t h) {
  const uint32_t path = (uint32_t)(h >> 44) & 0xFFFFu;
  if (LIKELY(path != CP_PATH_NONE && cp_path_valid_i(path))) cp_profile_state_t(t, path);
}
__attribute__((noinline)) static ncclResult_t state_counted(cp_thr *t, uint64_t h) {
  state_count(t, h);
  return NCCL_OK;
}

__attribute__((noinline)) static ncclResult_t state_general(void *eHandle, int eState,
                                                           const ncclProfilerEventStateArgs_v5_t *a) {
  const uint64_t h = (uint64_t)(uintptr_t)eHandle;
  cp_handle_fields f;
  cp_thr *t;
  cp_pool *pool = handle_pool_checked(h, &f, &t, "recordEventState");
  if (!pool) return NCCL_OK;
  if (f.gen == 0) return state_counted(t, h);
  return state_body(t, pool, &f, h, eState, a, pool->scratch);
}

static inline __attribute__((always_inline)) ncclResult_t state_body(cp_thr *t, cp_pool *pool, const cp_handle_fields *pf,
                                                                    uint64_t h, int eState,
                                                                    const ncclProfilerEventStateArgs_v5_t *a, int scratch) {
  const cp_handle_fields f = *pf;
  const int own = cp_pool_enter(pool, t);
  cp_slot *s = cp_pool_slot(pool, cp_slot_local(f.slot));
  if (UNLIKELY(!s || cp_slot_key(s) != cp_handle_key(h))) {
    const int released = pool->released, stopped = s && cp_slot_key(s) == (cp_handle_key(h) & ~CP_KEY_LIVE);
    cp_pool_leave(pool, own);
    const int kc_restop = !released && eState == ncclProfilerKernelChStop && kc_path(f.path);
    if (released) bad(W_AFTER_FINI, "recordEventState after its communicator was finalized; ignored");
    else if (kc_restop) bad_event(W_KC_RESTOP, kc_restop_what, h, f.path, t);   /* its stop follows */
    else if (stopped) bad_event(W_STATE_STOPPED, "recordEventState on a stopped event", h, f.path, t);
    else bad(W_STALE_HANDLE, "recordEventState with a stale or invalid handle; ignored");
    return NCCL_OK;
  }
  const uint32_t type = s->type & CP_SLOT_TYPE_BITS;
  if (UNLIKELY(type == ncclProfileKernelCh) && eState == ncclProfilerKernelChStop && a) {
    __atomic_store_n(&s->gpu_stop, a->pTimer, __ATOMIC_RELAXED);
    __atomic_store_n(&s->has_gpu_stop, 1, __ATOMIC_RELAXED);
  }
  const int pxn = s->is_pxn;
  cp_pool_leave(pool, own);
  if (UNLIKELY(scratch)) return NCCL_OK;
  if (LIKELY(f.path != CP_PATH_NONE)) cp_profile_state_t(t, f.path);
  /* With the trace and the capture off a state is only counted: the rest
   * stays out of line. */
  if (UNLIKELY(atomic_load_explicit(&cp_hot.trace_on, memory_order_relaxed) |
               __atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED)))
    state_record(t, h, f.comm, eState, a, pxn);
  return NCCL_OK;
}

/* The trace record of a state on the lock-free path: eState < 32, the
 * capture off.  What state_record writes, without its call. */
static inline __attribute__((always_inline)) void state_put_fast(const cp_thr *t, uint64_t h, int eState,
                                                                 const ncclProfilerEventStateArgs_v5_t *a,
                                                                 int pxn) {
  uint8_t kind = 0;
  uint64_t arg = 0;
  if (a) {
    kind = state_kind_of(eState);
    if (kind == 1) arg = a->transSize;
    else if (kind == 2) arg = (uint64_t)(int64_t)a->appendedProxyOps;
    else if (kind == 3) arg = a->pTimer;
    else arg = (uint64_t)(uintptr_t)a->data;
  }
  const cp_srec r = {CP_REC_STATE_C, (uint8_t)(kind | (pxn ? 8 : 0)), 0, (uint8_t)eState,
                     t->tid, h, ev_now(), arg};
  cp_trace_put_state_i(&r);
}

/* KernelCh's GPU stop (state 22) on the lock-free path too: the slot is
 * live with this handle's key, and a live KernelCh slot is written only by
 * its own events, all from its communicator's proxy thread (start, this
 * state, the stop that reads the two fields under the lock), so no other
 * thread writes or reads gpu_stop and has_gpu_stop meanwhile.  That saves
 * the proxy thread one round of the pool lock per channel, a lock the
 * application thread takes for every event it starts and stops: with
 * KernelCh on, NCCL's calls wait for the proxy thread.  A handle whose
 * slot does not match (NCCL 2.28's re-stop of an old KernelCh) goes to
 * state_body as before. */
__attribute__((noinline)) static ncclResult_t state_kc_stop(cp_thr *t, cp_pool *pool, uint64_t h,
                                                           const ncclProfilerEventStateArgs_v5_t *a) {
  const cp_handle_fields f = cp_handle_fields_of(h);
  const uint32_t ls = cp_slot_local(f.slot);
  if (UNLIKELY(!a || f.path == CP_PATH_NONE || cp_pool_peek_live(pool, ls, cp_handle_key(h)) != 1))
    return state_body(t, pool, &f, h, ncclProfilerKernelChStop, a, 0);
  cp_slot *s = &pool->slots0[ls];          /* peek_live == 1: in the first chunk */
  if (UNLIKELY(s->type != ncclProfileKernelCh))
    return state_body(t, pool, &f, h, ncclProfilerKernelChStop, a, 0);
  __atomic_store_n(&s->gpu_stop, a->pTimer, __ATOMIC_RELAXED);
  __atomic_store_n(&s->has_gpu_stop, 1, __ATOMIC_RELAXED);
  cp_profile_state_t(t, f.path);
  const int trace = atomic_load_explicit(&cp_hot.trace_on, memory_order_relaxed);
  const int capture = __atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED);
  if (LIKELY(trace && !capture)) state_put_fast(t, h, ncclProfilerKernelChStop, a, f.comm == 0);
  else if (UNLIKELY(trace | capture)) state_record(t, h, f.comm, ncclProfilerKernelChStop, a, f.comm == 0);
  return NCCL_OK;
}

/* The trace record of a counted state (trace on, capture off, eState < 32). */
__attribute__((noinline)) static ncclResult_t state_trace(const cp_thr *t, uint64_t h, int eState,
                                                         const ncclProfilerEventStateArgs_v5_t *a) {
  state_put_fast(t, h, eState, a, ((h >> 32) & 0xFFFu) == 0);
  CP_PH(CP_PH_U_TRACE, 0);
  return NCCL_OK;
}

__attribute__((noinline)) static ncclResult_t state_more(cp_thr *t, cp_pool *pool, uint64_t h, int eState,
                                                        const ncclProfilerEventStateArgs_v5_t *a, int counted) {
  if (UNLIKELY(!pool)) return state_general((void *)(uintptr_t)h, eState, a);
  const cp_handle_fields f = cp_handle_fields_of(h);
  if (UNLIKELY(!counted)) return state_body(t, pool, &f, h, eState, a, 0);
  const int trace = atomic_load_explicit(&cp_hot.trace_on, memory_order_relaxed);
  const int capture = __atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED);
  if (LIKELY(trace && !capture && (unsigned)eState < 32)) state_put_fast(t, h, eState, a, f.comm == 0);
  else if (UNLIKELY(trace | capture)) state_record(t, h, f.comm, eState, a, f.comm == 0);
  return NCCL_OK;
}

/* A state changes nothing in the slot except KernelCh's GPU stop, so the
 * common case takes no lock: the handle is checked against its slot with
 * one lock-free read (pool.h, cp_pool_peek_live) and PXN comes from the
 * pool (comm 0 is the detach pool).  A state
 * racing the event's stop on another thread is counted or not, as it
 * would be with the lock.  Anything the read cannot settle (no match, a
 * slot outside the first chunk, the path table full) goes to state_body,
 * which takes the lock and tells the bad cases apart; KernelCh's GPU stop
 * goes to state_kc_stop.
 *
 * States are the most frequent callback (1.4 per event), so the common
 * case is a leaf: everything else, the trace record included, leaves it by
 * a tail call (state_more, state_trace, state_kc_stop), so it saves and
 * restores two registers where it saved six (trace off: 120 -> 105
 * instructions per event in states). */
ncclResult_t cp_core_state(void *eHandle, int eState, const ncclProfilerEventStateArgs_v5_t *a) {
  CP_PH_BEGIN();
  const uint64_t h = (uint64_t)(uintptr_t)eHandle;
  cp_thr *t = cp_tls_thr;
  cp_pool *pool = fast_pool(t, h);
  if (UNLIKELY(pool == NULL)) return state_more(t, NULL, h, eState, a, 0);
  if (UNLIKELY((h & 0xFFu) == 0)) return state_counted(t, h);
  if (UNLIKELY(eState == ncclProfilerKernelChStop)) return state_kc_stop(t, pool, h, a);
  const uint32_t path = (uint32_t)(h >> 44) & 0xFFFFu;
  if (UNLIKELY(path == CP_PATH_NONE) ||
      UNLIKELY(cp_pool_peek_live(pool, (uint32_t)(h >> 8) & CP_LOCAL_MASK, cp_handle_key(h)) != 1))
    return state_more(t, pool, h, eState, a, 0);
  /* The profile entry's chunk not there yet: state_body counts it (and
   * allocates the chunk) under the lock, the one call here that would not
   * be a tail call. */
  cp_prof_ent *c = LIKELY(path < CP_PROF_CHUNK * CP_PROF_NCHUNK) ? t->prof[path / CP_PROF_CHUNK] : NULL;
  if (UNLIKELY(c == NULL)) return state_more(t, pool, h, eState, a, 0);
  CP_PH(CP_PH_U_ENTRY, 1);
  cp_inc(&c[path % CP_PROF_CHUNK].states, 1);
  CP_PH(CP_PH_U_COUNT, 0);
  const int trace = atomic_load_explicit(&cp_hot.trace_on, memory_order_relaxed);
  const int capture = __atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED);
  if (LIKELY(!(trace | capture))) return NCCL_OK;
  if (LIKELY(trace && !capture && (unsigned)eState < 32)) return state_trace(t, h, eState, a);
  return state_more(t, pool, h, eState, a, 1);
}

/* ---- counted events' stops and states, before anything else ----
 * A counted event (host sampling: a handle of generation 0, no slot)
 * leaves its stop nothing to do but a GroupApi's or a KernelLaunch's
 * hooks (the mask control's and the launch timer's), and its state only
 * adds one to its path's states.  While no communicator was
 * finalized, collprof runs and no capture is on (one line, cp_hot), these
 * take that case before the thread's block or any pool is read: the
 * handle's tag, generation and type bits say all.  What they leave out is
 * the check that the handle's communicator is one of ours, which for a
 * handle that does nothing but name a path is no loss; everything else
 * (after finalize, after collprof_shutdown, with a capture, or any other
 * handle) goes the way it went before. */
static inline int quiet_now(void) {
  return !(atomic_load_explicit(&cp_hot.fini_any, memory_order_relaxed) |
           atomic_load_explicit(&cp_hot.stopped, memory_order_relaxed) |
           __atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED));
}
static inline int counted_handle(uint64_t h) {
  return (h >> 60) == CP_HANDLE_TAG && (h & 0xFFu) == 0;
}
static inline int stop_quiet(uint64_t h) {
  const uint32_t b = (uint32_t)(h >> 8) & 0xFu;   /* counted_slot: the type's bit index + 1 */
  if (!counted_handle(h) || b == 0 || !quiet_now()) return 0;
  if (b == counted_slot(ncclProfileGroupApi) || b == counted_slot(ncclProfileKernelLaunch)) {
    cp_thr *t = cp_tls_thr;   /* their hooks: the calling thread's, as stop_general gives them */
    if (UNLIKELY(t == NULL)) return 0;
    if (b == counted_slot(ncclProfileKernelLaunch) && t->lt_cur == 0) return 1;   /* cp_lt_launch_stop's idle case */
    stop_counted(t, h);
  }
  return 1;
}
static inline int state_quiet(uint64_t h) {
  if (!counted_handle(h) || !quiet_now()) return 0;
  cp_thr *t = cp_tls_thr;
  if (UNLIKELY(t == NULL)) return 0;
  state_count(t, h);   /* an off event's path is none: nothing counted */
  return 1;
}

/* ---- init / finalize ---- */
static ncclResult_t init_common(void **context, uint64_t comm_id, int *mask, const char *name,
                                int nnodes, int nranks, int rank, ncclDebugLogger_t logfn) {
  if (!context) { bad(W_INIT_ARG, "init with a NULL context pointer"); return NCCL_INVALID_ARGUMENT; }
  *context = NULL;
  pthread_once(&first_once, first_init);
  if (atomic_load_explicit(&cp_hot.stopped, memory_order_relaxed)) {
    bad(W_SHUTDOWN, "NCCL callback after collprof_shutdown(); ignored");
    return NCCL_OK;
  }
  int mask_in = mask ? __atomic_load_n(mask, __ATOMIC_RELAXED) : 0;
  uint32_t m = mask ? cp_mask_attach(mask) : 0;
  if (mask) cp_mask_comm_id(comm_id);
  char uuid[40];
  cp_cuda_uuid(uuid, sizeof uuid);
  cp_comm *c = cp_registry_add(comm_id, name, nnodes, nranks, rank, uuid);
  if (!c) {
    bad(W_INIT_FAIL, "cannot register a communicator (too many, or out of memory); it is not profiled");
    return NCCL_SYSTEM_ERROR;
  }
  const unsigned ncomms = (unsigned)atomic_fetch_add(&g.active_comms, 1) + 1;
  /* the blocks and trace rings of the threads that record first made
   * now, not in their first callbacks: a calling thread and a proxy
   * thread per communicator (one thread driving several communicators
   * leaves some spare; a thread per GPU, as nccl-tests -t, needs them
   * all) */
  cp_thr_prepare(2 * ncomms);
  cp_trace_prepare(2 * ncomms);
  cp_bump_prepare();   /* new paths' texts (bump.h) */
  *context = (void *)(uintptr_t)c->ctx_value;
  lifecycle(c, c->ctx_value, m, 0);
  /* NCCL 2.28 runs a one-rank communicator's collectives as a local copy
   * before any profiler event (enqueue.cc, taskAppend: ncclLaunchOneRank),
   * and its send/recv to itself likewise: on one H200 the test app's calls
   * on one rank gave no event at all (test/gpu/run.sh 1).  An empty
   * profile says nothing by itself, so say it once (summary.log marks the
   * communicator too). */
  static atomic_int one_rank_said;
  if (nranks == 1 && !atomic_exchange_explicit(&one_rank_said, 1, memory_order_relaxed))
    cp_warn("communicator \"%s\" has one rank: NCCL sends no profiler event for its calls (it runs them as "
            "a local copy), so they are not in the profile; said once per process",
            c->comm_name);
  if (__atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED))
    cp_capture_comm_init(c->ctx_value, comm_id, c->comm_name, nnodes, nranks, rank, mask_in, (int)m);
  if (logfn)
    logfn(NCCL_LOG_INFO, NCCL_PROFILE_SUBSYS, __FILE__, __LINE__,
          "collprof: profiling communicator %s rank %d/%d (mask %u)", c->comm_name, rank, nranks, m);
  return NCCL_OK;
}

static ncclResult_t fini_common(void *context) {
  const uint64_t ctxv = (uint64_t)(uintptr_t)context;
  cp_defer_flush();   /* proxy-thread callbacks recorded so far reach the pools first */
  cp_comm *c = cp_registry_from_ctx(ctxv);
  if (!c) { bad(W_FINI_CTX, "finalize with a context collprof did not create; ignored"); return NCCL_OK; }
  int was = 0;
  if (!__atomic_compare_exchange_n(&c->finalized, &was, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    bad(W_DOUBLE_FINI, "finalize twice on one communicator; ignored");
    return NCCL_OK;
  }
  /* Its slots go now: a job that creates and destroys communicators in a
   * loop must not grow.  Pending GPU spans and live events are accounted
   * first; the pool structs and the registry entry stay (trace writer,
   * summary, and handles that still name the index).  Under lanes_lock: a
   * lane created from now on would see finalized and not be. */
  cp_spin_lock(&c->lanes_lock);
  atomic_store_explicit(&cp_hot.fini_any, 1, memory_order_relaxed);   /* before any lane's flag */
  for (uint32_t i = 0; i < CP_LANES; i++) {
    cp_pool *p = c->lanes[i];
    if (!p) continue;
    __atomic_store_n(&p->finalized, 1, __ATOMIC_RELAXED);
    cp_pool_excl_lock(p);   /* its owner may be another thread (pool_owner.h) */
    cp_pool_drain(p);       /* posts first: spans and child times of late children */
    cp_pool_release_chunks(p);
    cp_pool_drop_inbox(p);
    cp_pool_excl_unlock(p);
  }
  cp_spin_unlock(&c->lanes_lock);
  lifecycle(c, ctxv, 0, 1);
  if (__atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED)) cp_capture_fini(ctxv);
  if (atomic_fetch_sub(&g.active_comms, 1) == 1 && cp_output_on_last_finalize)
    cp_output_on_last_finalize();
  return NCCL_OK;
}

/* ---- v5 ---- */
static ncclResult_t v5_init(void **context, uint64_t commId, int *mask, const char *name, int nNodes,
                            int nranks, int rank, ncclDebugLogger_t logfn) {
  return init_common(context, commId, mask, name, nNodes, nranks, rank, logfn);
}
/* Proxy-thread types and their handles go to proxy_defer.c when it is on
 * (cp_defer_on is 0 otherwise: one load and a not-taken branch). */
static ncclResult_t v5_start(void *context, void **eHandle, ncclProfilerEventDescr_v5_t *d) {
  if (UNLIKELY(d && cp_defer_type(d->type))) return cp_defer_start(context, eHandle, d, 0);
  return cp_core_start(context, eHandle, d, 0);
}
static ncclResult_t api_stop(void *eHandle) {
  if (LIKELY(stop_quiet((uint64_t)(uintptr_t)eHandle))) return NCCL_OK;
  if (UNLIKELY(cp_defer_handle(eHandle))) return cp_defer_stop(eHandle);
  return cp_core_stop(eHandle);
}
static ncclResult_t v5_state(void *eHandle, ncclProfilerEventState_v5_t st, ncclProfilerEventStateArgs_v5_t *a) {
  if (LIKELY(state_quiet((uint64_t)(uintptr_t)eHandle))) return NCCL_OK;
  if (UNLIKELY(cp_defer_handle(eHandle))) return cp_defer_state(eHandle, (int)st, a);
  return cp_core_state(eHandle, (int)st, a);
}

CP_EXPORT ncclProfiler_v5_t ncclProfiler_v5 = {
  "collprof", v5_init, v5_start, api_stop, v5_state, fini_common,
};

/* ---- v4: uint8_t type, no API events, Coll/P2p parent is the Group ---- */
static ncclResult_t v4_init(void **context, int *mask, const char *name, uint64_t commHash, int nNodes,
                            int nranks, int rank, ncclDebugLogger_t logfn) {
  cp_mask_api_v4();
  return init_common(context, commHash, mask, name, nNodes, nranks, rank, logfn);
}

static void v4_to_v5(const ncclProfilerEventDescr_v4_t *a, ncclProfilerEventDescr_v5_t *b) {
  memset(b, 0, sizeof *b);
  b->type = a->type;
  b->parentObj = a->parentObj;
  b->rank = a->rank;
  switch (a->type) {
  case ncclProfileColl:
    b->coll.seqNumber = a->coll.seqNumber; b->coll.func = a->coll.func;
    b->coll.sendBuff = a->coll.sendBuff; b->coll.recvBuff = a->coll.recvBuff;
    b->coll.count = a->coll.count; b->coll.root = a->coll.root;
    b->coll.datatype = a->coll.datatype; b->coll.nChannels = a->coll.nChannels;
    b->coll.nWarps = a->coll.nWarps; b->coll.algo = a->coll.algo; b->coll.proto = a->coll.proto;
    break;
  case ncclProfileP2p:
    b->p2p.func = a->p2p.func; b->p2p.buff = a->p2p.buff; b->p2p.datatype = a->p2p.datatype;
    b->p2p.count = a->p2p.count; b->p2p.peer = a->p2p.peer; b->p2p.nChannels = a->p2p.nChannels;
    break;
  case ncclProfileProxyOp:
    b->proxyOp.pid = a->proxyOp.pid; b->proxyOp.channelId = a->proxyOp.channelId;
    b->proxyOp.peer = a->proxyOp.peer; b->proxyOp.nSteps = a->proxyOp.nSteps;
    b->proxyOp.chunkSize = a->proxyOp.chunkSize; b->proxyOp.isSend = a->proxyOp.isSend;
    break;
  case ncclProfileProxyStep: b->proxyStep.step = a->proxyStep.step; break;
  case ncclProfileKernelCh:
    b->kernelCh.channelId = a->kernelCh.channelId; b->kernelCh.pTimer = a->kernelCh.pTimer;
    break;
  case ncclProfileNetPlugin: b->netPlugin.id = a->netPlugin.id; b->netPlugin.data = a->netPlugin.data; break;
  default: break;
  }
}

static ncclResult_t v4_start(void *context, void **eHandle, ncclProfilerEventDescr_v4_t *d) {
  if (!d) return cp_core_start(context, eHandle, NULL, 1);
  ncclProfilerEventDescr_v5_t v5;
  v4_to_v5(d, &v5);
  if (UNLIKELY(cp_defer_type(v5.type))) return cp_defer_start(context, eHandle, &v5, 1);
  return cp_core_start(context, eHandle, &v5, 1);
}
static ncclResult_t v4_state(void *eHandle, ncclProfilerEventState_v4_t st, ncclProfilerEventStateArgs_v4_t *a) {
  ncclProfilerEventStateArgs_v5_t b;
  if (a) memcpy(&b, a, sizeof b);
  if (UNLIKELY(cp_defer_handle(eHandle))) return cp_defer_state(eHandle, (int)st, a ? &b : NULL);
  return cp_core_state(eHandle, (int)st, a ? &b : NULL);
}

CP_EXPORT ncclProfiler_v4_t ncclProfiler_v4 = {
  "collprof", v4_init, v4_start, api_stop, v4_state, fini_common,
};

/* ---- the timing wrappers (cost_sample.c): each callback's own time ---- */
#define TIMED(call)                              \
  do {                                           \
    const uint64_t o0_ = cp_oneoff_mine();       \
    const uint64_t t0_ = cp_cost_begin();        \
    const ncclResult_t r_ = (call);              \
    cp_cost_end(t0_, o0_);                       \
    return r_;                                   \
  } while (0)
static ncclResult_t t5_start(void *context, void **eHandle, ncclProfilerEventDescr_v5_t *d) {
  TIMED(v5_start(context, eHandle, d));
}
static ncclResult_t t_stop(void *eHandle) { TIMED(api_stop(eHandle)); }
static ncclResult_t t5_state(void *eHandle, ncclProfilerEventState_v5_t st, ncclProfilerEventStateArgs_v5_t *a) {
  TIMED(v5_state(eHandle, st, a));
}
static ncclResult_t t4_start(void *context, void **eHandle, ncclProfilerEventDescr_v4_t *d) {
  TIMED(v4_start(context, eHandle, d));
}
static ncclResult_t t4_state(void *eHandle, ncclProfilerEventState_v4_t st, ncclProfilerEventStateArgs_v4_t *a) {
  TIMED(v4_state(eHandle, st, a));
}
#undef TIMED

/* NCCL calls through the struct it looked up (its loader keeps a pointer
 * to our symbol), so what these members name is what the next callback
 * runs.  Pointer-sized aligned stores: a thread of NCCL's that reads the
 * member at the same time gets the old function or the new one. */
void cp_plugin_timed(int on) {
  __atomic_store_n(&ncclProfiler_v5.startEvent, on ? t5_start : v5_start, __ATOMIC_RELEASE);
  __atomic_store_n(&ncclProfiler_v5.stopEvent, on ? t_stop : api_stop, __ATOMIC_RELEASE);
  __atomic_store_n(&ncclProfiler_v5.recordEventState, on ? t5_state : v5_state, __ATOMIC_RELEASE);
  __atomic_store_n(&ncclProfiler_v4.startEvent, on ? t4_start : v4_start, __ATOMIC_RELEASE);
  __atomic_store_n(&ncclProfiler_v4.stopEvent, on ? t_stop : api_stop, __ATOMIC_RELEASE);
  __atomic_store_n(&ncclProfiler_v4.recordEventState, on ? t4_state : v4_state, __ATOMIC_RELEASE);
}
