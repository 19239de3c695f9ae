/*
 * parent_link.c — the half of parent linking that crosses threads: a
 * parent in another thread's pool, read without it and posted to
 * (pool_owner.h), and the KernelCh spans NCCL's proxy thread gathers for
 * the sampled Coll/P2p of another thread (kc_span).  The inline half, a
 * parent in the caller's own pool, is in parent_link.h.
 */
#include <stdint.h>
#include <string.h>
#include "nccl_profiler_abi.h"
#pragma GCC visibility push(hidden)
#include "parent_link.h"
#include "pool_owner.h"
#include "profile.h"

/* ---- kc_span: a Coll/P2p's GPU span gathered on the KernelCh's thread ----
 * Once a pool has seen a KernelCh from another thread (NCCL's proxy
 * thread: kc_remote), its sampled Coll/P2p hold nothing for their
 * KernelCh (kc_n, their channel count, instead of holds: start_gpu_fields).
 * That thread reads the parent at its first KernelCh's start without the
 * pool (generation, path, size class, kc_seq, epoch, kc_n:
 * cp_pool_peek_parent, which takes no hold from it; the later channels
 * find the gathering by the handle, kc_span_find_h), gathers the span of its kc_n channels in a
 * table of CP_KC_SPANS parents (tls.h) and accounts it in its own profile
 * (cp_profile_span: summed over threads at a snapshot) when the last one
 * stops; a parent pushed out of a full table is accounted with the
 * channels it has, and so are a thread's parents still open when it ends
 * (cp_kc_span_thread_end: NCCL's proxy thread ends at ncclCommDestroy, before
 * the summary's snapshot).  The parent's thread does nothing for its KernelCh: no reference,
 * blacklist entry, post or span of its own.  Why: with every event on
 * every call on 2 H200s, that work was most of collprof's excess over the
 * do-nothing plugin at 8 B-1 MiB (share/doc/performance.md, "the KernelCh
 * link"); this took a quarter of the excess away.  What keeps the parent's
 * slot readable without holds is the pool's round robin: a slot is handed
 * out again only after the cursor went round, some 200 calls with the
 * default 1024 slots, while a span more than CP_KC_SLOT_TRUST (32) calls
 * late is dropped anyway; pools under CP_KC_SPAN_MIN_SLOTS slots keep the
 * holds (kc_batch.h).  The KernelCh's duration no longer counts as the
 * parent's child time (the parent's self time then includes it, as for
 * any child on another thread that links nothing). */
/* The gathering of parent (pool, slot idx, generation gen under gen_mask:
 * the whole one, or a handle's low byte), looked up from the entry found
 * last (t->kcs_last): a Coll's channels start one after the other, and
 * stop so. */
static inline __attribute__((always_inline)) struct cp_kc_span *kc_span_find(cp_thr *t, const cp_pool *pp, uint32_t idx,
                                                                            uint32_t gen, uint32_t gen_mask) {
  const uint32_t l = t->kcs_last % CP_KC_SPANS;
  for (uint32_t k = 0; k < CP_KC_SPANS; k++) {
    const uint32_t i = (l + k) % CP_KC_SPANS;
    struct cp_kc_span *e = &t->kcs[i];
    if (e->pool == pp && e->idx == idx && (e->gen & gen_mask) == gen) {
      t->kcs_last = i;
      return e;
    }
  }
  return NULL;
}
static void kc_span_account(cp_thr *t, struct cp_kc_span *e) {
  if (e->bad) cp_inc(&t->gpu_dropped, 1);
  else if (e->nkch && e->ge >= e->gs) {
    cp_path_mark_gpu(e->path);
    cp_profile_span(e->path, e->ge - e->gs, (int)e->first, e->bytes);
  }
  memset(e, 0, sizeof *e);
}
/* tls.h cp_thr_exit_hook: the ending thread's open parents, with what
 * they have, and an empty table for the thread that takes the block on. */
void cp_kc_span_thread_end(cp_thr *t) {
  for (int i = 0; i < CP_KC_SPANS; i++)
    if (t->kcs[i].pool) kc_span_account(t, &t->kcs[i]);
}
/* A channel joins its parent's gathering. */
static inline void kc_span_join(struct cp_kc_span *e, plink *l) {
  e->started++;
  l->kc_epoch = e->started <= e->kc_n ? e->kc_epoch : 0;
  l->batched = 1;
}
/* The gathering a KernelCh's parent handle names (its generation's low
 * byte and its path, as cp_pool_peek_parent compares them), before any
 * read of the parent's slot: every channel after a Coll's first finds it
 * here and reads nothing of the slot (cp_link_parent_other), which its first
 * channel read already.  Why: that read was some 60 instructions of each
 * of the proxy thread's KernelCh starts (callgrind, collprof-bench proxy
 * mode); with 24 channels a call it is made once instead of 24 times. */
static struct cp_kc_span *kc_span_find_h(cp_thr *t, const cp_pool *pp, uint32_t idx, uint32_t gen8, uint32_t path) {
  struct cp_kc_span *e = kc_span_find(t, pp, idx, gen8, 0xFFu);
  return e && e->path == path ? e : NULL;
}
static void kc_span_open(cp_thr *t, cp_pool *pp, uint32_t ls, uint32_t path, const cp_parent_view *v, plink *l) {
  struct cp_kc_span *e = kc_span_find(t, pp, ls, v->gen, ~0u);
  if (!e) {
    uint32_t top = 0;
    for (int i = 0; i < CP_KC_SPANS; i++) {
      if (t->kcs[i].age > top) top = t->kcs[i].age;
      if (!e || !t->kcs[i].pool || (e->pool && t->kcs[i].age < e->age)) e = &t->kcs[i];
    }
    if (e->pool) kc_span_account(t, e);   /* the oldest, incomplete: what it has */
    t->kcs_last = (uint32_t)(e - t->kcs);
    e->pool = pp;
    e->idx = ls;
    e->gen = v->gen;
    e->path = path;
    e->kc_n = v->kc_n;
    e->first = v->first;
    e->kc_epoch = v->kc_epoch;
    e->kc_seq = v->kc_seq;
    /* the size class from acls (written atomically), not the slot's
     * bytes (written plainly by its thread): a byte count of that class */
    e->bytes = v->acls > 1 ? 1ull << (v->acls - 2) : 0;
    e->age = top + 1;
  }
  kc_span_join(e, l);
}

/* A parent in another pool (start_general).  A pool this thread owns, or
 * a locked one: held as usual.  Another thread's: read without the pool,
 * its reference posted (pool_owner.h); a KernelCh takes one of its holds
 * there and then, so it knows at once whether it reports to the sample. */
void cp_link_parent_other(cp_thr *t, cp_pool *pp, const cp_handle_fields *pf, plink *l, int kch, int ax) {
  const uintptr_t o = cp_pool_owner(pp);
  cp_parent_view v;
  int took = 0, r = -1;
  const uint32_t ls = cp_slot_local(pf->slot);
  if (o != 0 && o != (uintptr_t)t) {
    if (kch) {
      struct cp_kc_span *e;
      if (!__atomic_load_n(&pp->kc_remote, __ATOMIC_RELAXED)) __atomic_store_n(&pp->kc_remote, 1, __ATOMIC_RELAXED);
      else if ((e = kc_span_find_h(t, pp, ls, pf->gen, pf->path)) != NULL) {   /* a later channel */
        kc_span_join(e, l);
        l->slot = pf->slot;
        l->gen = e->gen;
        return;
      }
    }
    r = cp_pool_peek_parent(pp, ls, pf->gen, pf->path, kch, &v, &took);
  }
  if (r < 0) {
    const int own = cp_pool_enter(pp, t);
    link_parent(pp, pf, l, kch, ax);
    cp_pool_leave(pp, own);
    return;
  }
  /* (the slot's type is not read without the pool: the path's, the same) */
  if (r == 1 && ax && cp_path_valid_i(pf->path)) l->acls = parent_acls(cp_path_type(pf->path), v.acls);
  if (r == 1 && kch && !took && v.kc_n) {   /* the parent holds nothing: its span gathered here */
    kc_span_open(t, pp, ls, pf->path, &v, l);
    l->slot = pf->slot;
    l->gen = v.gen;
    return;
  }
  if (r == 0 || (!kch && !v.live)) return;   /* gone, or stopped (link_parent) */
  if (took) l->kc_epoch = v.kc_epoch;
  else {
    const cp_post m = {.idx = ls, .gen = v.gen, .op = CP_POST_REF};
    cp_pool_post(pp, &m);
  }
  if (kch) cp_kcb_open(t, pp, ls, v.gen);   /* its stop joins the parent's batch */
  l->slot = pf->slot;
  l->gen = v.gen;
  l->origin_pid = 0;   /* another thread's pool is never the PXN detach pool (locked) */
  l->linked = 1;
}

/* Give back a reference on a parent in another pool, with what the child
 * adds (see cp_pool_parent_done): held when this thread may, else posted
 * -- a KernelCh's (is_kc) into its parent's batch when one is open
 * (kc_batch.h). */
void cp_release_parent_other(cp_thr *t, cp_pool *pp, uint32_t pslot, uint32_t pgen, int took_ref,
                                 uint64_t dur, int kch, int bad, uint64_t gs, uint64_t ge, int is_kc) {
  const uint32_t ls = cp_slot_local(pslot);
  const uintptr_t o = cp_pool_owner(pp);
  if (o == 0 || o == (uintptr_t)t) {
    const int own = cp_pool_enter(pp, t);
    cp_slot *ps = cp_pool_slot(pp, ls);
    if (ps && ps->gen == pgen) cp_pool_parent_done(pp, ps, ls, took_ref != 0, dur, kch != 0, bad, gs, ge);
    cp_pool_leave(pp, own);
    return;
  }
  if (is_kc && cp_kcb_take(t, pp, ls, pgen, took_ref, dur, kch, bad, gs, ge)) return;
  const cp_post m = {.idx = ls, .gen = pgen, .op = CP_POST_UNREF, .flags = (uint8_t)(bad ? CP_POSTF_BAD : 0),
                     .nkch = (uint16_t)(kch && !bad), .nref = took_ref != 0, .dur = dur, .gs = gs, .ge = ge};
  cp_pool_post(pp, &m);
}

/* A parent in another pool (after ours was left): the slot-reuse check
 * here, on a lock-free read of the parent's kc_seq, and the rest held or
 * posted (cp_release_parent_other). */
int cp_parent_update_other(cp_thr *t, uint32_t pcomm, uint32_t pslot, uint32_t pgen,
                                                         int took_ref, uint64_t dur, int kch, uint64_t gs,
                                                         uint64_t ge, int is_kc) {
  cp_pool *pp = remote_pool(t, pcomm, cp_slot_lane(pslot));   /* not this thread's */
  if (!pp) return 1;
  const int bad = kch && kc_untrusted(pp, cp_pool_peek_kc_seq(pp, cp_slot_local(pslot), pgen));
  cp_release_parent_other(t, pp, pslot, pgen, took_ref, dur, kch, bad, gs, ge, is_kc);
  return !bad;
}

/* A KernelCh of a kc_span parent stopped: its span into the gathering,
 * the slot-reuse check on the kept kc_seq; the parent's span accounted
 * when its kc_n channels stopped. */
int cp_kc_span_stop(cp_thr *t, uint32_t pcomm, uint32_t pslot, uint32_t pgen, int kch,
                                                  uint64_t gs, uint64_t ge) {
  cp_pool *pp = remote_pool(t, pcomm, cp_slot_lane(pslot));
  struct cp_kc_span *e = pp ? kc_span_find(t, pp, cp_slot_local(pslot), pgen, ~0u) : NULL;
  if (!e) return 1;
  const int bad = kch && kc_untrusted(pp, e->kc_seq);
  if (bad) e->bad = 1;
  else if (kch) {
    if (e->nkch == 0 || gs < e->gs) e->gs = gs;
    if (e->nkch == 0 || ge > e->ge) e->ge = ge;
    e->nkch++;
  }
  if (++e->stopped >= e->kc_n && e->stopped >= e->started) kc_span_account(t, e);
  return !bad;
}
