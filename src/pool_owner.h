/*
 * pool_owner.h — who may change a pool, and how other threads reach it.
 *
 * A lane's pool (registry.h) has one owner: the thread that records its
 * events there.  NCCL starts, stops and changes the state of an event on
 * the thread that started it (every callback of the fixtures), so nearly
 * everything a pool sees comes from its owner.  Taking the pool lock for
 * each of those callbacks cost 20 ns of the 90 per event on the
 * development VM (test/bench/ablate.sh no-lock): the locked exchange is a
 * full barrier, paid twice per event.  So the owner takes no lock.
 *
 * Owner (cp_pool_enter): store inside = 1, a compiler barrier, and read ctl;
 * ctl == 0 means nobody else wants the pool and the owner goes on; at the
 * end inside = 0 (release).  No locked instruction, no fence.
 *
 * Everyone else comes in one of two ways:
 *  - Posts (cp_pool_post).  What another thread does to a parent here --
 *    a KernelCh or ProxyOp of the proxy thread naming the application
 *    thread's Coll -- goes into the pool's inbox, a bounded queue of small
 *    messages (take a reference, give it back with the child's time and
 *    GPU span), which the pool's holder applies at its next entry.  What
 *    the child needs at once (the parent's generation, its KernelCh hold
 *    and epoch) it reads without the lock (pool.h, cp_pool_peek_parent).
 *    A full inbox is emptied by the poster itself, with exclusive access.
 *  - Exclusive access (cp_pool_excl_lock): snapshot, finalize, a stop or
 *    state on another thread's event (NCCL does not do that; collprof
 *    stays correct if it does), a full inbox.  The pool lock, then ctl's
 *    WANT bit, then membarrier(2) (MEMBARRIER_CMD_PRIVATE_EXPEDITED: every
 *    running thread of the process passes a full barrier), then wait for
 *    inside == 0.  The barrier is what lets the owner's side do without one
 *    (asymmetric Dekker, as in userspace RCU's membarrier flavour): either
 *    the owner's inside = 1 is visible to the waiter, or the owner's later
 *    read of ctl sees WANT and it takes the lock like everyone else.  One
 *    system call per exclusive access, never per event of the owner.
 *    Without membarrier (old kernel, seccomp; COLLPROF_TEST_NO_MEMBARRIER)
 *    the owner sets inside with a locked exchange instead (a full barrier):
 *    correct, and as slow as the lock was.
 *
 * Locked mode (owner 0): the PXN detach pool, the self-cost pool, pools of
 * tests, and a lane that a second thread had to share (more than CP_LANES
 * threads on one communicator, cp_pool_share) take the lock for
 * everything, as all pools did before.
 */
#ifndef COLLPROF_POOL_OWNER_H
#define COLLPROF_POOL_OWNER_H
#include <stdatomic.h>
#include <stdint.h>
#include "nccl_profiler_abi.h"
#include "paths.h"
#include "pool.h"

#define CP_CTL_WANT 1u     /* a thread with exclusive access, or waiting for it */
#define CP_CTL_SHARED 2u   /* locked mode for good (cp_pool_share) */

/* 1 when membarrier(2) is registered for this process (cp_pool_owner_init);
 * back to 0 for good if it fails later (pool_owner.c, barrier_all). */
#include "hot.h"   /* cp_hot.pool_asym */
/* Register membarrier (idempotent; COLLPROF_TEST_NO_MEMBARRIER=1: don't);
 * again in a forked child. */
void cp_pool_owner_init(void);
void cp_pool_owner_after_fork(void);

/* The owner's entry failed (WANT or SHARED): the lock, as a locked pool. */
void cp_pool_enter_slow(cp_pool *p);
/* Apply every post in the inbox (pool held, either way). */
void cp_pool_drain(cp_pool *p);

static inline uintptr_t cp_pool_owner(const cp_pool *p) { return __atomic_load_n(&p->owner, __ATOMIC_RELAXED); }

/* Hold pool p as thread `me` (its cp_thr): returns 1 when held as owner
 * (no lock), 0 when held with the lock.  Applies pending posts either way.
 * Leave with cp_pool_leave(p, that value). */
static inline int cp_pool_enter(cp_pool *p, const void *me) {
  int owned = 0;
  if (__builtin_expect(cp_pool_owner(p) == (uintptr_t)me, 1)) {
    if (__builtin_expect(__atomic_load_n(&cp_hot.pool_asym, __ATOMIC_RELAXED), 1)) {
      atomic_store_explicit(&p->inside, 1u, memory_order_relaxed);
      atomic_signal_fence(memory_order_seq_cst);   /* the compiler's order; membarrier the CPU's */
    } else {
      atomic_exchange_explicit(&p->inside, 1u, memory_order_seq_cst);   /* a full barrier */
    }
    if (__builtin_expect(atomic_load_explicit(&p->ctl, memory_order_seq_cst) == 0, 1)) owned = 1;
    else cp_pool_enter_slow(p);
  } else {
    cp_pool_excl_lock(p);
  }
  if (__builtin_expect(atomic_load_explicit(&p->in_tail, memory_order_acquire) != __atomic_load_n(&p->in_seen, __ATOMIC_RELAXED), 0))
    cp_pool_drain(p);
  return owned;
}
static inline void cp_pool_leave(cp_pool *p, int owned) {
  if (__builtin_expect(owned, 1)) atomic_store_explicit(&p->inside, 0u, memory_order_release);
  else cp_pool_excl_unlock(p);
}

/* A message for a parent's pool (cp_pool_post).  An UNREF gives back
 * what nref children (each holding a reference) or a child without one
 * (nref 0) hand their parent at their stops: one child's, or a whole
 * batch of KernelCh under one Coll/P2p gathered on the proxy thread
 * (kc_batch.h). */
enum { CP_POST_REF = 1, CP_POST_UNREF = 2 };
#define CP_POSTF_BAD 4u        /* UNREF: a span failed the slot-reuse check */
typedef struct cp_post {
  uint32_t idx, gen;           /* the parent: local slot index, whole generation */
  uint8_t op, flags;
  uint16_t nkch;               /* UNREF: KernelCh spans merged into gs..ge */
  uint32_t nref;               /* UNREF: references given back */
  uint64_t dur, gs, ge;        /* UNREF: the children's summed duration, GPU span */
} cp_post;
_Static_assert(sizeof(cp_post) == 40, "a post stays 40 bytes");

/* What stopping children give their parent's slot s (generation already
 * checked, pool held): nref references back, their time while the parent
 * is live, and nkch KernelCh GPU spans merged into gs..ge -- or, when a
 * span failed the slot-reuse check (bad), a dropped sample.  Same pool or
 * posted. */
static inline void cp_pool_parent_done(cp_pool *p, cp_slot *s, uint32_t idx, uint32_t nref, uint64_t dur,
                                       uint32_t nkch, int bad, uint64_t gs, uint64_t ge) {
  if (nref == 1) cp_pool_unref(p, s, idx);
  else if (nref) cp_pool_unref_n(p, s, idx, nref);
  if (s->live) s->child_ns += dur;
  if (bad) {
    s->span_bad = 1;
    if (s->span_n == 0) s->span_n = 1;   /* flushed as one dropped sample */
    return;
  }
  if (nkch && (s->type & (ncclProfileColl | ncclProfileP2p)) && !p->scratch) {
    if (s->span_n == 0) {
      s->span_min = gs;
      s->span_max = ge;
      cp_path_mark_gpu(s->path);
    } else {
      if (gs < s->span_min) s->span_min = gs;
      if (ge > s->span_max) s->span_max = ge;
    }
    s->span_n = (uint16_t)(s->span_n + nkch < UINT16_MAX ? s->span_n + nkch : UINT16_MAX);
  }
}

/* Deliver m to pool p from a thread that does not own it: straight under
 * the lock for a locked pool, else queued (applied by the pool's holder at
 * its next entry); a full queue is emptied here with exclusive access.
 * Never waits for more than one callback of the owner. */
void cp_pool_post(cp_pool *p, const cp_post *m);
/* Free the inbox (finalize, pool held and drained; later posts are
 * dropped: the communicator is finalized). */
void cp_pool_drop_inbox(cp_pool *p);
/* The inbox made now, not at the first post: a communicator's first lane
 * (registry.c), whose Coll/P2p NCCL's proxy thread posts to at its first
 * KernelCh stop (a parent in another lane), so that callback does not
 * make it.  NULL-safe; nothing if there is one. */
void cp_pool_prepare_inbox(cp_pool *p);
/* Apply one message (pool held). */
void cp_pool_apply(cp_pool *p, const cp_post *m);

/* Make p a locked pool for good: a thread that is not its owner has to
 * record its own events here (every lane taken). */
void cp_pool_share(cp_pool *p);
/* Make `me` the owner of a locked pool that no other thread records in
 * (lane 0, claimed by its first thread). */
void cp_pool_claim(cp_pool *p, const void *me);

/* What a child on another thread reads of a parent without the lock: 1
 * and the fields when the slot still has the handle's generation (low 8
 * bits) and path, read twice around the fields so that a reuse in between
 * is seen; 0 otherwise; -1 for a fallback slot (pool.h), which only the
 * pool's holder may look at.  A KernelCh also takes one of the parent's holds
 * (pool.h, cp_pool_hold) with a compare-and-swap: *took_hold 1 then, and
 * no reference is posted for it. */
typedef struct cp_parent_view {
  uint32_t gen, kc_epoch;
  uint32_t live;   /* not stopped yet (when read) */
  uint32_t acls;   /* its anchor class (pool.h: acls), valid when its path's type sets one */
  uint32_t kc_n, first;   /* channels for a proxy-thread span (pool.h, kc_n), of a first-call sample */
  uint64_t kc_seq;
} cp_parent_view;
int cp_pool_peek_parent(cp_pool *p, uint32_t idx, uint32_t gen8, uint32_t path, int kch, cp_parent_view *v,
                        int *took_hold);
/* The same slot's kc_seq if it still has generation gen (a KernelCh's
 * stop: the slot-reuse check), else 0. */
uint64_t cp_pool_peek_kc_seq(cp_pool *p, uint32_t idx, uint32_t gen);

/* Posts applied, queued-full fallbacks, exclusive accesses (all pools). */
extern _Atomic uint64_t cp_pool_posts_full, cp_pool_excl_count;

#endif
