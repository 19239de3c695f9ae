/*
 * event_stop.c — stopEvent (cp_core_stop, and NCCL's entry cp_api_stop):
 * the event's time into this thread's profile (profile.h), its parent
 * updated (parent_link.h), its trace record copied from its slot into
 * this thread's ring, its slot released; the hooks of a GroupApi's and a
 * KernelLaunch's stop (mask control, launch timer).
 *
 * Three ways, cheapest first.  A counted event's stop (host sampling: a
 * handle of generation 0, no slot) is handled from the handle's bits in
 * cp_api_stop (stop_quiet) while nothing that needs the full checks (a
 * finalized communicator, shutdown, capture) has happened; a handle of the
 * pool this thread used last goes to cp_core_stop's common case; every
 * other to stop_general, with every check.  Finalize released the
 * communicator's slots (pool.h): later stops on its handles are counted
 * as after-finalize bad calls.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "nccl_profiler_abi.h"
#pragma GCC visibility push(hidden)
#include "plugin.h"
#include "callback_core.h"
#include "affinity.h"
#include "call_modes.h"
#include "capture.h"
#include "launch_timer.h"
#include "mask_control.h"
#include "parent_link.h"
#include "phase_timing.h"
#include "pool_owner.h"
#include "profile.h"
#include "proxy_defer.h"
#include "trace.h"
#include "trace_ring.h"

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
 * cp_handle_pool_checked (declared in callback_core.h, beside fast_pool):
 * every check, one warning for a bad handle (cb names the callback in
 * it); NULL when the call is to be ignored.  The state callbacks use it
 * too. */
__attribute__((cold, noinline)) static void bad_handle(int kind, const char *cb, const char *what) {
  char line[160];
  snprintf(line, sizeof line, "%s %s", cb, what);
  cp_bad_call(kind, line);
}

cp_pool *cp_handle_pool_checked(uint64_t h, cp_handle_fields *f, cp_thr **tp, const char *cb) {
  if (UNLIKELY(!h)) { bad_handle(W_NULL_HANDLE, cb, "with a NULL handle"); return NULL; }
  if (UNLIKELY(!cp_handle_decode(h, f))) {
    bad_handle(W_FOREIGN_HANDLE, cb, "with a handle collprof did not create");
    return NULL;
  }
  if (UNLIKELY(atomic_load_explicit(&cp_hot.stopped, memory_order_relaxed))) {
    cp_bad_call(W_SHUTDOWN, "NCCL callback after collprof_shutdown(); ignored");
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
  cp_pool *pool = cp_handle_pool_checked(h, &f, &t, "stopEvent");
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
    if (released) cp_bad_call(W_AFTER_FINI, "stopEvent after its communicator was finalized; ignored");
    else if (kc_restop) {
      if (!scratch) cp_mask_kc_lost();
      cp_bad_event(W_KC_RESTOP, CP_KC_RESTOP_WHAT, h, f.path, t);
    } else if (api_restop(f.path)) {
      /* NCCL's kept API handle, stopped again (api_restop) */
    } else if (twice) cp_bad_event(W_DOUBLE_STOP, "stopEvent twice on one event", h, f.path, t);
    else cp_bad_call(W_STALE_HANDLE, "stopEvent with a stale or invalid handle; ignored");
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
    kch_ok = cp_parent_update_other(t, pcomm, pslot, pgen, took_ref, dur, kch, gs, ge, type == ncclProfileKernelCh);
  else if (UNLIKELY(plinked == 2))
    kch_ok = cp_kc_span_stop(t, pcomm, pslot, pgen, kch, gs, ge);
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
 * handle) goes the way it went before.  The state's half is
 * event_state.c's state_quiet. */
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

/* NCCL's stopEvent (both ABI versions; plugin.c names it in the structs).
 * Proxy-thread handles go to proxy_defer.c when it is on. */
ncclResult_t cp_api_stop(void *eHandle) {
  if (LIKELY(stop_quiet((uint64_t)(uintptr_t)eHandle))) return NCCL_OK;
  if (UNLIKELY(cp_defer_handle(eHandle))) return cp_defer_stop(eHandle);
  return cp_core_stop(eHandle);
}
