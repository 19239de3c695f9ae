/*
 * event_start.c — startEvent (cp_core_start): a new event's path, its
 * slot or its count, and the hooks that act on it.
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
 * ways still.  A counted start whose lookup the thread's memo holds
 * (counted_memo.h) goes to start_counted_child, or through start_fast to
 * start_counted_fast, and writes no pool; a counted KernelLaunch the
 * launch timer leaves alone and a counted Group get no handle at all, so
 * NCCL makes no stop callback for them (counted_drop_handle).
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
  case ncclProfileProxyOp: *func = d->proxyOp.isSend ? cp_plug.id_send : cp_plug.id_recv; break;
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

/* An event of a counted call (host sampling, call_modes.h): its path counted, a
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
