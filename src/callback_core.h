/*
 * callback_core.h — what the recording callbacks share: the process state,
 * the bad-call warnings, the bits a counted handle carries, and the
 * per-thread memos that find a context's or a handle's pool.  The
 * callbacks are split by concern (plugin.c: init, finalize and the
 * exported structs; event_start.c, event_stop.c, event_state.c: the three
 * event callbacks, with start_general.c for a start's every other case,
 * start_counted.c for the starts that only count and start_common.h for
 * what all starts share; parent_link.c: a
 * child's link to its parent; call_modes.h: what each API call records).
 * What a callback runs on its common path is static inline here, so the
 * split costs no call: the common paths were one file's static functions
 * before, and test/bench/instr_per_event.sh counted the same instructions
 * per event after (716 and 941, trace off and on; 714 and 939 once the
 * start callback was split too).
 */
#ifndef COLLPROF_CALLBACK_CORE_H
#define COLLPROF_CALLBACK_CORE_H
#include <stdatomic.h>
#include <stdint.h>
#include "nccl_profiler_abi.h"
#include "handle.h"
#include "hot.h"
#include "paths.h"
#include "plugin.h"
#include "pool.h"
#include "registry.h"
#include "tls.h"
#include "clock.h"
#include "gpu_estimate.h"
#pragma GCC visibility push(hidden)

#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- process state (written once at first init, then read-only) ---- */
struct cp_plug {   /* pid, stopped, trace_on: in cp_hot (hot.h) */
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
};
extern struct cp_plug cp_plug;   /* plugin.c */

/* ---- one warning per kind ---- */
enum {
  W_NULL_EHANDLE, W_NULL_DESCR, W_BAD_TYPE, W_NULL_CTX, W_FOREIGN_CTX, W_AFTER_FINI,
  W_SHUTDOWN, W_NULL_HANDLE, W_FOREIGN_HANDLE, W_STALE_HANDLE, W_DOUBLE_STOP,
  W_STATE_STOPPED, W_KC_RESTOP, W_FINI_CTX, W_DOUBLE_FINI, W_POOL_FULL, W_INIT_ARG, W_INIT_FAIL, W_NKINDS
};
/* Counts the bad call and prints its first line of this kind (plugin.c). */
__attribute__((cold)) void cp_bad_call(int kind, const char *what);
/* The same, naming the event (handle, call path, calling thread). */
__attribute__((cold)) void cp_bad_event(int kind, const char *what, uint64_t h, uint32_t path, const cp_thr *t);

/* NCCL 2.28.9's proxy (profilerProxyProgress) tests a channel's work for
 * its end even when it has not yet seen its start; when the GPU wrote both
 * timestamps between the two reads, it "stops" the KernelCh through the
 * handle its sub-operation still holds from an earlier call: state 22 and
 * a stop on an event that stopped long ago, and the current call's KernelCh
 * of that channel is never started, or started and never stopped.  Seen on
 * H200 (4 ranks, Broadcast): the two calls are counted as bad calls, one
 * line says what happened, and the sample in flight is paid back
 * (mask_control.h, cp_mask_kc_lost). */
static inline int path_of_type(uint32_t path, uint32_t types) {
  return path != CP_PATH_NONE && cp_path_valid(path) && (cp_path_type(path) & types) != 0;
}
static inline int kc_path(uint32_t path) { return path_of_type(path, ncclProfileKernelCh); }
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
static inline int api_restop(uint32_t path) { return path_of_type(path, ncclProfileCollApi | ncclProfileP2pApi); }
#define CP_KC_RESTOP_WHAT \
    "NCCL stopped a KernelCh again (NCCL 2.28 does when its proxy sees a channel's work end before its start); " \
    "that channel's KernelCh of the current call is lost"

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
cp_pool *cp_lane_of(cp_thr *t, cp_comm *c);

/* Per-thread memo of the last context decoded, with this thread's lane
 * of it (also remembered as the pool its stops and states will name). */
static inline cp_comm *ctx_lookup(cp_thr *t, uint64_t v) {
  if (LIKELY(v && v == t->last_ctx)) return t->last_comm;
  cp_comm *c = cp_registry_from_ctx(v);
  if (c) {
    t->last_lpool = cp_lane_of(t, c);
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
/* ...and an off event's (HS_OFF, call_modes.h) has this bit too. */
#define CP_OFF_SLOT 0x10u
#define CP_OFF_BIT ((uint64_t)CP_OFF_SLOT << 8)
/* ...and a counted event of an untimed call (HS_UNTIMED, call_modes.h)
 * this one, so that its Coll/P2p children are told apart and recorded
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

static inline int valid_type(uint64_t t) { return t && !(t & (t - 1)) && t <= ncclProfileKernelLaunch; }

/* "Now" for an event: the clock, or the recorded time of a callback being
 * applied later (proxy_defer.h). */
static inline uint64_t ev_now(void) {
  const uint64_t r = cp_replay_ns;
  return LIKELY(!r) ? cp_clock_now() : r;
}

/* Stop and state: the pool of handle h, with every check, one warning for a
 * bad handle (cb names the callback in it); NULL when the call is to be
 * ignored (event_stop.c).  fast_pool: the common case only (the pool this
 * thread used last, not finalized), NULL to take the checked way. */
cp_pool *cp_handle_pool_checked(uint64_t h, cp_handle_fields *f, cp_thr **tp, const char *cb);
static inline cp_pool *fast_pool(const cp_thr *t, uint64_t h) {
  if (LIKELY(t && handle_in_last_pool(t, h))) {
    cp_pool *pool = t->last_pool;
    if (LIKELY(!(pool_finalized(pool) | atomic_load_explicit(&cp_hot.stopped, memory_order_relaxed))))
      return pool;
  }
  return NULL;
}

/* A counted event's stop or state while nothing needs the full checks
 * (event_stop.c, "counted events' stops"). */
static inline int quiet_now(void) {
  return !(atomic_load_explicit(&cp_hot.fini_any, memory_order_relaxed) |
           atomic_load_explicit(&cp_hot.stopped, memory_order_relaxed) |
           __atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED));
}
static inline int counted_handle(uint64_t h) {
  return (h >> 60) == CP_HANDLE_TAG && (h & 0xFFu) == 0;
}

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

#pragma GCC visibility pop
#endif
