/*
 * parent_link.h — a new event's link to its parent, and what a stopping
 * child gives back: its reference, its time while the parent is live, a
 * KernelCh's GPU span.  A parent in this thread's pool is linked and
 * updated under that pool (the inline half, here: the start and stop
 * callbacks' common case); one in another thread's pool is read without
 * it and posted to, and a sampled Coll's KernelCh on NCCL's proxy thread
 * gather its span there (parent_link.c, "kc_span").
 */
#ifndef COLLPROF_PARENT_LINK_H
#define COLLPROF_PARENT_LINK_H
#include "callback_core.h"
#include "kc_batch.h"
#pragma GCC visibility push(hidden)

/* Parent link of a new event, taken under the parent pool's lock. */
typedef struct plink {
  uint32_t slot, gen;   /* slot: lane and index, as in the handle */
  int32_t origin_pid;
  int linked;
  uint32_t kc_epoch;     /* KernelCh that took a hold: its expectation's epoch */
  uint32_t acls;         /* a proxy event's: its call's size class (pool.h), from the parent */
  int batched;           /* a KernelCh whose parent holds nothing: its span gathered (kc_span) */
} plink;

/* A new event's slot names its parent (comm: the parent's communicator):
 * linked (1, a reference taken) or, a KernelCh under a kc_span parent,
 * named only (2).  The three stores are written in both branches: with
 * them after the branches the timed start cost 2 instructions more
 * (test/bench/instr_per_event.sh). */
static inline __attribute__((always_inline)) void slot_parent(cp_slot *s, uint32_t comm, const plink *pl) {
  if (pl->linked) {
    s->parent_linked = 1;
    s->took_ref = 1;
    s->parent_comm = comm;
    s->parent_slot = pl->slot;
    s->parent_gen = pl->gen;
  } else if (UNLIKELY(pl->batched)) {
    s->parent_linked = 2;
    s->took_ref = 0;
    s->parent_comm = comm;
    s->parent_slot = pl->slot;
    s->parent_gen = pl->gen;
  }
}

/* Proxy events, counted per size class of their call (lean_estimate.h),
 * and the types whose slot carries that class (pool.h, acls). */
#define CP_PROXY_TYPES (ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileNetPlugin)
#define CP_ACLS_TYPES (ncclProfileColl | ncclProfileP2p | CP_PROXY_TYPES)
/* The class a parent passes down, by its type (ptype: NCCL's type bit,
 * flag bits allowed): another type's slot holds a stale one. */
static inline uint32_t parent_acls(uint32_t ptype, uint32_t acls) {
  return (ptype & CP_ACLS_TYPES) ? acls : 0;
}

/* Only a KernelCh links to a parent that has stopped: a stopped parent's
 * self time was settled at its stop, so all another child could give it
 * is its reference back, and the GPU span of a KernelCh is the one thing
 * a stopped Coll/P2p still takes.  NCCL starts Coll after its CollApi
 * stopped and ProxyOp after its Coll stopped (ABI doc), so this saves a
 * reference, its blacklist entry and the parent update at the stop -- or,
 * for a ProxyOp on the proxy thread, two posts to the owner's inbox. */
static inline void link_parent(cp_pool *pp, const cp_handle_fields *pf, plink *l, int kch, int ax) {
  const uint32_t ls = cp_slot_local(pf->slot);
  cp_slot *ps = cp_pool_slot(pp, ls);
  if (!ps || (cp_slot_key(ps) & ~CP_KEY_LIVE) != ((uint64_t)pf->gen | (uint64_t)pf->path << 32)) return;
  if (UNLIKELY(ax)) l->acls = parent_acls(ps->type, __atomic_load_n(&ps->acls, __ATOMIC_RELAXED));
  l->origin_pid = ps->is_pxn ? ps->origin_pid : 0;   /* the slot's second line: PXN only */
  /* A KernelCh takes over one of the references its Coll/P2p holds for it
   * (pool.h); one beyond them, or of an unsampled call, takes its own. */
  if (kch && cp_pool_hold_take(ps)) l->kc_epoch = ps->kc_epoch;
  else if (kch || ps->live) cp_pool_ref(pp, ps, ls);
  else return;
  l->slot = pf->slot;   /* lane and index: the parent's pool is found again at stop */
  l->gen = ps->gen;
  l->linked = 1;
}

/* Pools under this many slots keep their sampled Coll/P2p holding their
 * slots for their KernelCh (parent_link.c, "kc_span", says why). */
#define CP_KC_SPAN_MIN_SLOTS 512u

/* NCCL keeps 64 timestamp slots per channel, indexed by the channel's
 * work counter; the proxy reads a KernelCh's slot late.  Once more than
 * this many later KernelCh-on Coll/P2p started on the communicator, one of
 * them may have rewritten the slot (a Coll is one work item per channel, a
 * P2p at most one: half of 64 leaves room for two per call), and the times
 * NCCL hands over may be another item's.  sample_in_flight.c keeps this from
 * happening for N >= 2; with N = 1 it does, whenever the proxy falls
 * behind.  The count is read as published, in batches (pool.h,
 * CP_KC_OPS_BATCH), so a span goes at 25-32 later starts: never after. */
#define CP_KC_SLOT_TRUST 32u

/* What a stopping child gives its parent's slot: child time while the
 * parent is live, its GPU span (KernelCh) while the generation matches.
 * Returns 0 when the KernelCh span failed the slot check (not to be used
 * for the KernelCh's own path either). */
static inline int kc_untrusted(const cp_pool *pp, uint64_t kc_seq) {
  const uint64_t r = cp_replay_kc_ops;   /* a recorded stop: 1 + the count when NCCL made it */
  const uint64_t pub = LIKELY(!r) ? __atomic_load_n(&pp->kc_ops, __ATOMIC_RELAXED) : r - 1;
  /* kc_ops is published in batches (pool.h, CP_KC_OPS_BATCH): the count
   * may be up to CP_KC_OPS_BATCH - 1 above it, so a sample goes once that
   * many more might have started (at 25-32 later starts, not exactly 32),
   * never later.  Signed: this Coll's own start may not be published yet. */
  return kc_seq && (int64_t)(pub + (CP_KC_OPS_BATCH - 1) - kc_seq) >= (int64_t)CP_KC_SLOT_TRUST;
}
static inline __attribute__((always_inline)) int parent_update(cp_pool *pp, uint32_t pslot, uint32_t pgen,
                                                               int took_ref, uint64_t dur, int kch, uint64_t gs,
                                                               uint64_t ge) {
  const uint32_t ls = cp_slot_local(pslot);
  cp_slot *ps = cp_pool_slot(pp, ls);
  if (!ps || ps->gen != pgen) return 1;
  const int bad = kch && kc_untrusted(pp, ps->kc_seq);
  cp_pool_parent_done(pp, ps, ls, took_ref != 0, dur, kch != 0, bad, gs, ge);
  return !bad;
}

/* A parent in another pool (start_general; a KernelCh of another lane):
 * linked without holding two pools (parent_link.c). */
void cp_link_parent_other(cp_thr *t, cp_pool *pp, const cp_handle_fields *pf, plink *l, int kch, int ax);
/* A child's reference on a parent in another pool given back, with what
 * the child adds (parent_link.c). */
void cp_release_parent_other(cp_thr *t, cp_pool *pp, uint32_t pslot, uint32_t pgen, int took_ref,
                             uint64_t dur, int kch, int bad, uint64_t gs, uint64_t ge, int is_kc);
/* At a stop: the parent in another pool updated; a KernelCh's span into
 * its kc_span gathering.  0 when the KernelCh span failed the slot check. */
int cp_parent_update_other(cp_thr *t, uint32_t pcomm, uint32_t pslot, uint32_t pgen, int took_ref, uint64_t dur,
                           int kch, uint64_t gs, uint64_t ge, int is_kc);
int cp_kc_span_stop(cp_thr *t, uint32_t pcomm, uint32_t pslot, uint32_t pgen, int kch, uint64_t gs, uint64_t ge);
/* tls.h cp_thr_exit_hook: an ending thread's open gatherings accounted. */
void cp_kc_span_thread_end(cp_thr *t);

#pragma GCC visibility pop
#endif
