/*
 * event_start.c — startEvent (cp_core_start) and its common path: a new
 * event's path, its slot and its trace record, and the hooks that act on
 * it.  The starts that only count are start_counted.c's; every other case
 * is start_general.c's; what all of them share is start_common.h, and
 * what the two recorded starts share is start_record.h (the trace record)
 * and start_slot.h (the slot's GPU fields and size class).
 *
 * Hot path: decode the context (registry.h) and the parent handle
 * (handle.h) by arithmetic; the path from the parent handle's path id
 * (paths.h, per-thread cache); one slot from the communicator's pool,
 * held by its owner without a lock (pool.h, pool_owner.h); with the
 * trace on, the event record built in the slot, to be copied once at its
 * stop (event_stop.c).  No system call, no malloc, no lock shared by
 * threads of different communicators; one clock read.
 *
 * Counted events (host sampling, call_modes.h: most of them) take shorter
 * ways still (start_counted.c): cp_core_start sends what may be one
 * whose lookup the thread's memo holds (counted_memo.h) to
 * cp_start_counted_child or cp_start_group_api first, and start_fast and
 * start_general send the rest to cp_start_counted_fast; none writes a
 * pool.
 *
 * Two paths.  Nearly every event NCCL sends is on the communicator whose
 * context this thread decoded last, with a parent in the same pool:
 * start_fast takes that case with one compare (the context value).
 * Everything else (PXN, other pools, bad arguments, v4) goes to
 * start_general (start_general.c), which does the same work with every
 * check; the fast paths hand over before changing anything.
 * test_fast_path.c holds the two to the same numbers.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "nccl_profiler_abi.h"
#pragma GCC visibility push(hidden)
#include "plugin.h"
#include "callback_core.h"
#include "start_common.h"
#include "start_record.h"
#include "start_slot.h"
#include "call_modes.h"
#include "capture.h"
#include "coll_memo.h"
#include "counted_memo.h"
#include "launch_timer.h"
#include "mask_control.h"
#include "parent_link.h"
#include "phase_timing.h"
#include "pool_owner.h"
#include "profile.h"
#include "strtab.h"
#include "trace.h"
#include "trace_ring.h"

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
  if (UNLIKELY(type == ncclProfileGroupApi) && cp_plug.host_sample < 0) hs_note_start(t, now);
  plink pl = {0, 0, 0, 0, 0, 0, 0};
  uint32_t idx;
  const cp_handle_fields pf = {parent_path, pool->comm_index, (uint32_t)(pobj >> 8) & 0xFFFFFFu,
                               (uint32_t)pobj & 0xFFu};
  /* another lane's parent is linked before ours is held (start_general) */
  if (UNLIKELY(ppool != pool)) cp_link_parent_other(t, ppool, &pf, &pl, 1, 0);
  const int own = cp_pool_enter(pool, t);
  if ((pobj & 0xFFu) && ppool == pool)   /* a recorded parent (a counted one: untimed_coll) */
    link_parent(pool, &pf, &pl, type == ncclProfileKernelCh, (type & CP_PROXY_TYPES) != 0);
  CP_PH(CP_PH_S_ENTER, 0);
  cp_slot *s = cp_pool_alloc(pool, &idx);
  if (UNLIKELY(!s)) {
    *eHandle = NULL;
    cp_start_no_slot(t, pool, own, ppool, &pl, type == ncclProfileKernelCh);   /* leaves the pool */
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
    if (!LIKELY(compact)) cp_start_record(t, s, d, comm, 0, type, path, mypid, func, dt, now, pobj, handle, ctxv);
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
 * start_general would (cp_link_parent_other, before this lane is held),
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
 * Most counted events never come here (cp_start_counted_child takes them):
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
    if (UNLIKELY(counted && (pobj & CP_OFF_BIT))) { cp_start_off(t, eHandle, d, type, pool); return 1; }
    if (UNLIKELY(counted && (pobj & CP_UNT_BIT))) {
      unt = CP_UNT_BIT;
      if (untimed_coll(pobj, type)) counted = 0;
    }
    if (UNLIKELY(counted && (pobj & CP_LEAN_BIT))) {
      cp_start_lean(t, eHandle, d, type, parent_path, pool, hkey, ctxv);
      return 1;
    }
    if (UNLIKELY(counted && (pobj & CP_CLS_BIT))) unt = pobj & (CP_CLS_BIT | CP_ACLS_BITS);
  } else {
    if (type == ncclProfileGroupApi) hs_decide_once(t);
    counted = hs_counted_root(t, type);
    if (UNLIKELY(hs_off_root(t, type))) { cp_start_off(t, eHandle, d, type, pool); return 1; }
    unt = (uint64_t)hs_root_xslot(t) << 8;
  }
  if (counted) {
    cp_start_counted_fast(t, eHandle, d, type, parent_path, pool, hkey | unt, ctxv);
    return 1;
  }
  return start_recorded(t, eHandle, d, ctxv, pool, pool, type, pobj, parent_path, mypid);
}

/* start_fast, else start_general: where cp_start_counted_child hands over. */
__attribute__((noinline)) ncclResult_t cp_start_rest(cp_thr *t, void **eHandle,
                                                     const ncclProfilerEventDescr_v5_t *d, uint64_t ctxv) {
  if (start_fast(t, eHandle, d, ctxv)) return NCCL_OK;
  return cp_start_general((void *)(uintptr_t)ctxv, eHandle, d, 0);
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
      return cp_start_counted_child(t, eHandle, d, ctxv);
    if (!pobj && d->type == ncclProfileGroupApi) return cp_start_group_api(t, eHandle, d, ctxv);
    if ((pobj & (0xFFu | CP_OFF_BIT | CP_UNT_BIT | CP_LEAN_BIT | CP_CLS_BIT)) == CP_LEAN_BIT)
      return cp_start_lean_fast(t, eHandle, d, ctxv);
    return cp_start_rest(t, eHandle, d, ctxv);
  }
  return cp_start_general(context, eHandle, d, v4);
}

