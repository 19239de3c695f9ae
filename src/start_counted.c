/*
 * start_counted.c — the starts that record nothing but a count: a counted
 * call's events (host sampling, call_modes.h), a lean call's and an off
 * call's.  A counted start needs its path and nothing else: no slot, no
 * clock, no trace record.  The common case is that the thread's memo holds
 * the event's lookup (counted_memo.h), and cp_core_start (event_start.c)
 * sends such events here first, to functions of a few cache lines
 * (cp_start_counted_child, cp_start_group_api, cp_start_lean_fast); what
 * they cannot take goes on, unchanged, to event_start.c's long way
 * (cp_start_rest), which calls back here for a counted event the memo
 * did not hold (cp_start_counted_fast).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include "nccl_profiler_abi.h"
#pragma GCC visibility push(hidden)
#include "plugin.h"
#include "start_common.h"
#include "counted_memo.h"
#include "gpu_estimate.h"
#include "lean_estimate.h"
#include "parent_link.h"
#include "pool_owner.h"

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
/* ...and where it has: out of line, so that cp_start_counted_child calls
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
__attribute__((noinline)) uint64_t cp_cls_note(cp_thr *t, uint32_t type, uint32_t path, uint64_t bytes,
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
 * and a class as cp_cls_note says (the memo's entries never hold them). */
__attribute__((noinline)) void cp_start_counted_fast(cp_thr *t, void **eHandle,
                                                     const ncclProfilerEventDescr_v5_t *d, uint32_t type,
                                                     uint32_t parent_path, cp_pool *pool, uint64_t hkey,
                                                     uint64_t ctxv) {
  const cp_cmemo_key k = cp_cmemo_key_of(d, type);
  const cp_cmemo_ent *e = cp_cmemo_find(t, parent_path, type, &k);
  if (LIKELY(e != NULL)) {
    if (type == ncclProfileGroupApi) group_takes_posts(t, pool);
    if (UNLIKELY(hkey & CP_CLS_BIT)) hkey = cp_cls_note(t, type, (uint32_t)(e->hbits >> 44) & 0xFFFFu, e->bytes, hkey);
    counted_hit(t, eHandle, d, type, e, hkey, ctxv);
    return;
  }
  uint32_t func, dt;
  uint64_t bytes;
  descr_func(t, d, type, &func, &dt, &bytes);
  const uint32_t path = cp_path_child_t(t, parent_path, type, func);
  const uint64_t xbits = UNLIKELY(hkey & CP_CLS_BIT) ? cp_cls_note(t, type, path, bytes, hkey) : hkey;
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
__attribute__((noinline)) void cp_start_lean(cp_thr *t, void **eHandle, const ncclProfilerEventDescr_v5_t *d,
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
  cp_start_counted_fast(t, eHandle, d, type, parent_path, pool, hkey | CP_LEAN_BIT, ctxv);
  if ((type & (ncclProfileCollApi | ncclProfileP2pApi)) && *eHandle)
    lean_derive(t, d, type, (uint32_t)((uint64_t)(uintptr_t)*eHandle >> 44) & 0xFFFFu);
}

/* cp_start_lean's common case, from cp_core_start: a CollApi/P2pApi of this
 * thread's lane under a lean call's GroupApi, whose lookup the memo holds
 * (as cp_start_counted_child, plus lean_derive); anything else goes the long
 * way (cp_start_rest). */
__attribute__((noinline)) ncclResult_t cp_start_lean_fast(cp_thr *t, void **eHandle,
                                                          const ncclProfilerEventDescr_v5_t *d, uint64_t ctxv) {
  const uint64_t pobj = (uint64_t)(uintptr_t)d->parentObj;
  const uint64_t type64 = d->type;
  cp_pool *pool = t->last_lpool;
  if (t->last_pool != pool || !(type64 & (ncclProfileCollApi | ncclProfileP2pApi)) ||
      ((pobj ^ t->last_hkey) & CP_HKEY_MASK) != 0 ||
      UNLIKELY(pool_finalized(pool) | atomic_load_explicit(&cp_hot.stopped, memory_order_relaxed)) ||
      __atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED))
    return cp_start_rest(t, eHandle, d, ctxv);
  const uint32_t type = (uint32_t)type64, parent_path = (uint32_t)(pobj >> 44) & 0xFFFFu;
  const cp_cmemo_key k = cp_cmemo_key_of(d, type);
  const cp_cmemo_ent *e = cp_cmemo_find(t, parent_path, type, &k);
  if (!e) return cp_start_rest(t, eHandle, d, ctxv);
  counted_hit_count(t, eHandle, e, t->last_hkey | CP_LEAN_BIT);
  const uint32_t path = (uint32_t)(e->hbits >> 44) & 0xFFFFu;
  api_hooks(t, d, type, path, e->bytes);
  lean_derive(t, d, type, path);
  return NCCL_OK;
}

/* An event of an off call (HS_OFF): no path, no count, no record; its
 * GroupApi goes to the mask control's freeze rules and group count, and
 * takes in the pool's posts as a counted one does (start_counted). */
__attribute__((noinline)) void cp_start_off(cp_thr *t, void **eHandle, const ncclProfilerEventDescr_v5_t *d,
                                            uint32_t type, cp_pool *pool) {
  *eHandle = (void *)(uintptr_t)pool_handle(pool, CP_PATH_NONE, counted_slot(type) | CP_OFF_SLOT, 0);
  if (type != ncclProfileGroupApi) return;
  group_takes_posts(t, pool);
  if (UNLIKELY(d->groupApi.graphCaptured)) cp_mask_on_graph_capture();
  cp_mask_on_group_start(t->tid);
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
 * sends only what may be that case here, a GroupApi to cp_start_group_api
 * (below), and anything else, with nothing changed, goes on to start_fast
 * and start_general (cp_start_rest); all by tail calls, so that cp_core_start
 * keeps no register across a call (which cost it 40 instructions a start:
 * test/bench/instr_per_event.sh). */
__attribute__((noinline)) ncclResult_t cp_start_counted_child(cp_thr *t, void **eHandle,
                                                              const ncclProfilerEventDescr_v5_t *d,
                                                              uint64_t ctxv) {
  /* No full test of the type's and the parent path's validity here: the
   * memo holds only valid ones (filled by the long way, which tests them),
   * so an invalid one finds no entry and goes there (cp_start_rest).  Only
   * the type's range is tested (1..KernelLaunch: the memo's set index
   * takes its lowest bit). */
  const uint64_t pobj = (uint64_t)(uintptr_t)d->parentObj;
  const uint64_t type64 = d->type;
  cp_pool *pool = t->last_lpool;
  if (t->last_pool != pool || type64 - 1 >= ncclProfileKernelLaunch) return cp_start_rest(t, eHandle, d, ctxv);
  const uint32_t type = (uint32_t)type64;
  uint32_t parent_path = CP_PATH_NONE;
  uint64_t unt;   /* CP_UNT_BIT: an untimed call's, inherited */
  if (pobj) {
    if ((pobj & (0xFFu | CP_OFF_BIT | CP_LEAN_BIT | CP_CLS_BIT)) != 0 ||
        ((pobj ^ t->last_hkey) & CP_HKEY_MASK) != 0 || untimed_coll(pobj, type))
      return cp_start_rest(t, eHandle, d, ctxv);
    parent_path = (uint32_t)(pobj >> 44) & 0xFFFFu;
    unt = pobj & CP_UNT_BIT;
  } else if (type != ncclProfileGroup || (t->hs_mode != HS_COUNTED && t->hs_mode != HS_UNTIMED)) {
    return cp_start_rest(t, eHandle, d, ctxv);   /* a Group of a call not counted */
  } else {
    unt = t->hs_mode == HS_UNTIMED ? CP_UNT_BIT : 0;
  }
  if (UNLIKELY(pool_finalized(pool) | atomic_load_explicit(&cp_hot.stopped, memory_order_relaxed)) ||
      (type == ncclProfileProxyOp && d->proxyOp.pid != atomic_load_explicit(&cp_hot.pid, memory_order_relaxed)))
    return cp_start_rest(t, eHandle, d, ctxv);
  const cp_cmemo_key k = cp_cmemo_key_of(d, type);
  const cp_cmemo_ent *e = cp_cmemo_find(t, parent_path, type, &k);
  if (!e) return cp_start_rest(t, eHandle, d, ctxv);
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
 * few lines as cp_start_counted_child (start_fast's way spans two dozen).
 * Anything else goes on to cp_start_rest, told the decision is made. */
__attribute__((noinline)) ncclResult_t cp_start_group_api(cp_thr *t, void **eHandle,
                                                          const ncclProfilerEventDescr_v5_t *d, uint64_t ctxv) {
  cp_pool *pool = t->last_lpool;
  if (t->last_pool != pool ||
      UNLIKELY(pool_finalized(pool) | atomic_load_explicit(&cp_hot.stopped, memory_order_relaxed)))
    return cp_start_rest(t, eHandle, d, ctxv);
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
  return cp_start_rest(t, eHandle, d, ctxv);
}
