/*
 * start_general.c — startEvent in every case (cp_start_general): the
 * reference that event_start.c's common path must agree with
 * (test_fast_path.c holds the two to the same numbers).  It takes what
 * the common path hands over: a context other than the one this thread
 * decoded last, a parent in another pool, PXN events, the self-cost
 * pool, v4 (NCCL 2.27), and every bad argument, each with its one line on
 * stderr (cp_bad_call).  The counted, lean and off starts it finds go to
 * start_counted.c.
 *
 * PXN: a ProxyOp from another process (proxyOp.pid != our pid) or with a
 * context we did not create is recorded in the process-wide detach pool
 * (comm index 0) under the root element "PXN"; its context and parentObj
 * are never dereferenced.  ProxyStep/NetPlugin/KernelCh with an unknown
 * context whose parent is one of our detach-pool handles follow it there.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include "nccl_profiler_abi.h"
#pragma GCC visibility push(hidden)
#include "plugin.h"
#include "callback_core.h"
#include "start_common.h"
#include "start_record.h"
#include "start_slot.h"
#include "call_modes.h"
#include "mask_control.h"
#include "parent_link.h"
#include "pool_owner.h"

/* No slot (pool released or out of memory): undo the parent link (kc: a
 * KernelCh, whose link may have joined a batch: kc_batch.h), unlock the
 * pool (held on entry), one bad call.  For both recorded starts
 * (declared in start_slot.h). */
void cp_start_no_slot(cp_thr *t, cp_pool *pool, int own, cp_pool *ppool, const plink *pl, int kc) {
  const int released = pool->released;
  const uint32_t ls = cp_slot_local(pl->slot);
  if (pl->linked && ppool == pool) {
    cp_slot *ps = cp_pool_slot(pool, ls);
    if (ps && ps->gen == pl->gen) cp_pool_unref(pool, ps, ls);
  }
  cp_pool_leave(pool, own);
  if (pl->linked && ppool != pool) cp_release_parent_other(t, ppool, pl->slot, pl->gen, 1, 0, 0, 0, 0, 0, kc);
  if (released) cp_bad_call(W_AFTER_FINI, "startEvent on a finalized communicator; ignored");
  else cp_bad_call(W_POOL_FULL, "event pool exhausted (no memory); event not recorded");
}

/* ---- startEvent, every case (cp_core_start, event_start.c, takes the common one) ---- */
ncclResult_t cp_start_general(void *context, void **eHandle, const ncclProfilerEventDescr_v5_t *d, int v4) {
  if (UNLIKELY(!eHandle)) { cp_bad_call(W_NULL_EHANDLE, "startEvent with a NULL eHandle pointer"); return NCCL_OK; }
  *eHandle = NULL;
  if (UNLIKELY(!d)) { cp_bad_call(W_NULL_DESCR, "startEvent with a NULL descriptor"); return NCCL_OK; }
  if (UNLIKELY(atomic_load_explicit(&cp_hot.stopped, memory_order_relaxed))) {
    cp_bad_call(W_SHUTDOWN, "NCCL callback after collprof_shutdown(); ignored");
    return NCCL_OK;
  }
  if (UNLIKELY(!valid_type(d->type))) { cp_bad_call(W_BAD_TYPE, "startEvent with an unknown event type"); return NCCL_OK; }
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
      cp_bad_call(W_AFTER_FINI, "startEvent on a finalized communicator; ignored");
      return NCCL_OK;
    }
    pool = t->last_lpool;   /* ctx_lookup: this thread's lane of comm */
  } else if (!pxn && ctxv && ctxv == atomic_load_explicit(&cp_plug.scratch_ctx, memory_order_relaxed)) {
    pool = atomic_load_explicit(&cp_plug.scratch, memory_order_acquire);
    scratch = 1;
    if (!pool) return NCCL_OK;
  } else if (pxn || type == ncclProfileProxyOp ||
             ((type & (ncclProfileProxyStep | ncclProfileNetPlugin | ncclProfileKernelCh)) &&
              pdec && pf.comm == 0)) {
    pxn = 1;
    comm = NULL;
    pool = atomic_load_explicit(&cp_plug.detach, memory_order_acquire);
    if (!pool) { cp_bad_call(W_NULL_CTX, "proxy event before any communicator init; ignored"); return NCCL_OK; }
  } else {
    if (!ctxv) cp_bad_call(W_NULL_CTX, "startEvent with a NULL context (failed init?); ignored");
    else cp_bad_call(W_FOREIGN_CTX, "startEvent with a context collprof did not create; ignored");
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
    cp_start_off(t, eHandle, d, type, pool);
    return NCCL_OK;
  }
  if (hs && pdec && pf.gen == 0 && (pf.slot & CP_LEAN_SLOT)) {
    cp_start_lean(t, eHandle, d, type, parent_path, pool, pool->hkey, ctxv);
    return NCCL_OK;
  }
  uint32_t func, dt;
  uint64_t bytes;
  descr_func(t, d, type, &func, &dt, &bytes);
  uint32_t path = scratch ? cp_path_probe(parent_path, type, func) : cp_path_child_t(t, parent_path, type, func);
  if (hs) {
    if (pdec ? (pf.gen == 0 && !untimed_coll(pobj, type)) : (!pobj && hs_counted_root(t, type))) {
      uint32_t xs = pdec ? pf.slot & CP_XSLOTS : hs_root_xslot(t);
      if (UNLIKELY(xs & CP_CLS_SLOT)) xs = (uint32_t)(cp_cls_note(t, type, path, bytes, (uint64_t)xs << 8) >> 8);
      start_counted(t, eHandle, d, type, path, bytes, pool, ctxv, xs);
      return NCCL_OK;
    }
  }

  /* A parent in another pool is linked first, before ours is held (two
   * pools are never held at once): under its lock, or read without it
   * (another thread's lane: cp_link_parent_other). */
  plink pl = {0, 0, 0, 0, 0, 0, 0};
  const int ax = (type & CP_PROXY_TYPES) != 0;
  if (pdec && pf.gen && ppool != pool) cp_link_parent_other(t, ppool, &pf, &pl, type == ncclProfileKernelCh, ax);
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
  if (type == ncclProfileGroupApi && cp_plug.host_sample < 0 && comm && !pxn && !v4 && !scratch)
    hs_note_start(t, now);
  uint32_t idx;
  const int own = cp_pool_enter(pool, t);
  if (pdec && pf.gen && ppool == pool) link_parent(pool, &pf, &pl, type == ncclProfileKernelCh, ax);
  cp_slot *s = cp_pool_alloc(pool, &idx);
  if (UNLIKELY(!s)) {
    cp_start_no_slot(t, pool, own, ppool, &pl, type == ncclProfileKernelCh);   /* leaves the pool */
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
  if (trace) cp_start_record(t, s, d, comm, pxn, type, path, mypid, func, dt, now, pobj, handle, ctxv);
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
