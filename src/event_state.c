/*
 * event_state.c — recordEventState (cp_core_state, and NCCL's entries
 * cp_v5_state and cp_v4_state): a state counts on its event's path, and
 * with the trace on it is one 32-byte record; KernelCh's GPU stop (state
 * 22) is kept on its slot for the stop.  A state changes nothing else in
 * the slot, so the common case takes no lock: the handle is checked
 * against its slot with one lock-free read (pool.h, cp_pool_peek_live).
 * A counted event's state (host sampling) only counts, from the handle's
 * bits, in the entry (state_quiet).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "nccl_profiler_abi.h"
#pragma GCC visibility push(hidden)
#include "plugin.h"
#include "callback_core.h"
#include "call_modes.h"
#include "capture.h"
#include "mask_control.h"
#include "phase_timing.h"
#include "pool_owner.h"
#include "profile.h"
#include "proxy_defer.h"
#include "trace.h"
#include "trace_ring.h"

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
  cp_pool *pool = cp_handle_pool_checked(h, &f, &t, "recordEventState");
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
    if (released) cp_bad_call(W_AFTER_FINI, "recordEventState after its communicator was finalized; ignored");
    else if (kc_restop) cp_bad_event(W_KC_RESTOP, CP_KC_RESTOP_WHAT, h, f.path, t);   /* its stop follows */
    else if (stopped) cp_bad_event(W_STATE_STOPPED, "recordEventState on a stopped event", h, f.path, t);
    else cp_bad_call(W_STALE_HANDLE, "recordEventState with a stale or invalid handle; ignored");
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

/* A counted event's state, from its handle's bits alone while nothing
 * needs the full checks (event_stop.c, "counted events' stops and
 * states", says when). */
static inline int state_quiet(uint64_t h) {
  if (!counted_handle(h) || !quiet_now()) return 0;
  cp_thr *t = cp_tls_thr;
  if (UNLIKELY(t == NULL)) return 0;
  state_count(t, h);   /* an off event's path is none: nothing counted */
  return 1;
}

/* NCCL's recordEventState (plugin.c names them in the structs).
 * Proxy-thread handles go to proxy_defer.c when it is on. */
ncclResult_t cp_v5_state(void *eHandle, ncclProfilerEventState_v5_t st, ncclProfilerEventStateArgs_v5_t *a) {
  if (LIKELY(state_quiet((uint64_t)(uintptr_t)eHandle))) return NCCL_OK;
  if (UNLIKELY(cp_defer_handle(eHandle))) return cp_defer_state(eHandle, (int)st, a);
  return cp_core_state(eHandle, (int)st, a);
}
ncclResult_t cp_v4_state(void *eHandle, ncclProfilerEventState_v4_t st, ncclProfilerEventStateArgs_v4_t *a) {
  ncclProfilerEventStateArgs_v5_t b;
  if (a) memcpy(&b, a, sizeof b);
  if (UNLIKELY(cp_defer_handle(eHandle))) return cp_defer_state(eHandle, (int)st, a ? &b : NULL);
  return cp_core_state(eHandle, (int)st, a ? &b : NULL);
}
