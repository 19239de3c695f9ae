/*
 * start_common.h — what both kinds of start share (event_start.c and
 * start_general.c: a recorded event, and the entry; start_counted.c: a
 * counted, lean or off one): the descriptor's func, datatype and bytes, the hooks a start runs,
 * and a counted start's count and handle.  Static inline: they run in
 * every start.  The out-of-line starts of each file that the other calls
 * are declared at the end.
 */
#ifndef COLLPROF_START_COMMON_H
#define COLLPROF_START_COMMON_H
#include "callback_core.h"
#include "call_modes.h"
#include "capture.h"
#include "launch_timer.h"
#include "mask_control.h"
#include "pool_owner.h"
#include "profile.h"
#include "strtab.h"
#pragma GCC visibility push(hidden)

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

/* An API call's count x datatype size, for the GPU sampling rule's small
 * calls (gpu_sample_rule.c); its path's own bytes stay 0, as before (the
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

/* start_counted.c: the counted, lean and off starts (cp_start_counted_fast,
 * cp_start_lean, cp_start_off: from start_fast and start_general), the
 * short ways cp_core_start tries first (cp_start_counted_child,
 * cp_start_group_api, cp_start_lean_fast), and a counted start's size
 * class bits (cp_cls_note). */
uint64_t cp_cls_note(cp_thr *t, uint32_t type, uint32_t path, uint64_t bytes, uint64_t bits);
void cp_start_counted_fast(cp_thr *t, void **eHandle, const ncclProfilerEventDescr_v5_t *d, uint32_t type,
                           uint32_t parent_path, cp_pool *pool, uint64_t hkey, uint64_t ctxv);
void cp_start_lean(cp_thr *t, void **eHandle, const ncclProfilerEventDescr_v5_t *d, uint32_t type,
                   uint32_t parent_path, cp_pool *pool, uint64_t hkey, uint64_t ctxv);
void cp_start_off(cp_thr *t, void **eHandle, const ncclProfilerEventDescr_v5_t *d, uint32_t type, cp_pool *pool);
ncclResult_t cp_start_lean_fast(cp_thr *t, void **eHandle, const ncclProfilerEventDescr_v5_t *d, uint64_t ctxv);
ncclResult_t cp_start_counted_child(cp_thr *t, void **eHandle, const ncclProfilerEventDescr_v5_t *d, uint64_t ctxv);
ncclResult_t cp_start_group_api(cp_thr *t, void **eHandle, const ncclProfilerEventDescr_v5_t *d, uint64_t ctxv);
/* event_start.c: start_fast, else start_general -- where the short ways
 * hand over. */
ncclResult_t cp_start_rest(cp_thr *t, void **eHandle, const ncclProfilerEventDescr_v5_t *d, uint64_t ctxv);
/* start_general.c: startEvent in every case, every check made (context
 * as NCCL passed it; v4: NCCL 2.27's start). */
ncclResult_t cp_start_general(void *context, void **eHandle, const ncclProfilerEventDescr_v5_t *d, int v4);

#pragma GCC visibility pop
#endif
