/*
 * event_start.c — startEvent (cp_core_start): a new event's path, its
 * slot and its trace record, and the hooks that act on it.  The starts
 * that only count are start_counted.c's; what both kinds share is
 * start_common.h.
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
 * start_general, which does the same work with every check; the fast
 * paths hand over before changing anything.  test_fast_path.c holds the
 * two to the same numbers.
 *
 * PXN: a ProxyOp from another process (proxyOp.pid != our pid) or with a
 * context we did not create is recorded in the process-wide detach pool
 * (comm index 0) under the root element "PXN"; its context and parentObj
 * are never dereferenced.  ProxyStep/NetPlugin/KernelCh with an unknown
 * context whose parent is one of our detach-pool handles follow it there.
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

/* References a Coll/P2p of a sampled call holds for its KernelCh children. */
static inline uint32_t kc_hold(const ncclProfilerEventDescr_v5_t *d, uint32_t type) {
  const uint32_t n = type == ncclProfileColl ? d->coll.nChannels : d->p2p.nChannels;
  return n ? n : 1;
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
  if (pl->linked && ppool != pool) cp_release_parent_other(t, ppool, pl->slot, pl->gen, 1, 0, 0, 0, 0, 0, kc);
  if (released) cp_bad_call(W_AFTER_FINI, "startEvent on a finalized communicator; ignored");
  else cp_bad_call(W_POOL_FULL, "event pool exhausted (no memory); event not recorded");
}

/* ---- startEvent, every case (cp_core_start below takes the common one) ---- */
__attribute__((noinline)) static ncclResult_t start_general(void *context, void **eHandle,
                                                           const ncclProfilerEventDescr_v5_t *d, int v4) {
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
  return start_general((void *)(uintptr_t)ctxv, eHandle, d, 0);
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
  return start_general(context, eHandle, d, v4);
}
