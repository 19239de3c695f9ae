/*
 * start_slot.h — a recorded start's new slot beyond its header: the GPU
 * side (a sampled Coll/P2p's hold for its KernelCh children, a KernelCh's
 * GPU start and the clock offset it refines), the call's size class, and
 * what a start does when no slot can be had.  Shared by the two recorded
 * starts, the common one (start_recorded, event_start.c) and the general
 * one (start_general.c); inline, as it was when both were in one file.
 */
#ifndef COLLPROF_START_SLOT_H
#define COLLPROF_START_SLOT_H
#include <stdint.h>
#include "nccl_profiler_abi.h"
#pragma GCC visibility push(hidden)
#include "callback_core.h"
#include "mask_control.h"
#include "parent_link.h"
#include "pool_owner.h"

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

/* start_general.c: no slot (pool released or out of memory): undo the
 * parent link, leave the pool (held on entry), one bad call. */
__attribute__((cold)) void cp_start_no_slot(cp_thr *t, cp_pool *pool, int own, cp_pool *ppool, const plink *pl,
                                            int kc);

#pragma GCC visibility pop
#endif
