/*
 * pool_owner.c — exclusive access, the inbox of posts, and a parent read
 * without the pool (pool_owner.h says why and how they fit).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/membarrier.h>
#include <sys/syscall.h>
#endif
#pragma GCC visibility push(hidden)
#include "pool_owner.h"
#include "config.h"
#include "oneoff.h"

_Atomic uint64_t cp_pool_posts_full, cp_pool_excl_count;

static int membarrier_call(int cmd) {
#if defined(__linux__) && defined(SYS_membarrier)
  return (int)syscall(SYS_membarrier, cmd, 0, 0);
#else
  (void)cmd;
  errno = ENOSYS;
  return -1;
#endif
}

/* Set once membarrier failed after registration (barrier_all); tests
 * make it fail (COLLPROF_TEST_MEMBARRIER_FAIL=1). */
static atomic_int barrier_broken, test_fail;

static void asym_register(void) {
  const char *f = getenv("COLLPROF_TEST_MEMBARRIER_FAIL");
  atomic_store_explicit(&test_fail, f && *f && strcmp(f, "0") != 0, memory_order_relaxed);
  atomic_store_explicit(&barrier_broken, 0, memory_order_relaxed);
  const char *e = getenv("COLLPROF_TEST_NO_MEMBARRIER");
  int ok = 0;
#if defined(__linux__) && defined(SYS_membarrier)
  if (!(e && *e && strcmp(e, "0") != 0)) {
    const int cmds = membarrier_call(MEMBARRIER_CMD_QUERY);
    ok = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
         membarrier_call(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0;
  }
#else
  (void)e;
#endif
  /* Only ever set before the first pool has an owner (first init), or in
   * a forked child that has one thread. */
  __atomic_store_n(&cp_hot.pool_asym, ok, __ATOMIC_RELAXED);
}

void cp_pool_owner_init(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, asym_register);
}

/* The registration belongs to the address space: a child registers anew
 * (one thread, nobody inside a pool). */
void cp_pool_owner_after_fork(void) { asym_register(); }

/* How long a store may sit in a CPU's store buffer, with a margin of
 * three orders of magnitude: stores drain in nanoseconds. */
#define CP_GRACE_NS 1000000L

/* Every running thread of the process passes a full barrier: the owner's
 * inside = 1 is visible now, or its next read of ctl sees WANT.  Without
 * membarrier the owner fences itself (pool_owner.h).
 *
 * membarrier does not fail once registered, but a seccomp filter that the
 * application installs later can make it fail.  Then the process goes
 * over to the owner's own barrier for good (cp_hot.pool_asym = 0, one line on
 * stderr), and this and every later exclusive access waits a grace period
 * before it reads inside: an owner that entered without a barrier read ctl
 * before WANT was visible, and its earlier store of inside = 1 leaves its
 * store buffer long before the period ends; an owner entering after that
 * sees WANT, or cp_hot.pool_asym = 0 and fences itself.  Slow (a millisecond
 * per exclusive access), and only ever after such a failure. */
static void barrier_all(void) {
  if (!atomic_load_explicit(&barrier_broken, memory_order_relaxed)) {
    if (!__atomic_load_n(&cp_hot.pool_asym, __ATOMIC_RELAXED)) return;
    if (!atomic_load_explicit(&test_fail, memory_order_relaxed) &&
        membarrier_call(MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0)
      return;
    if (!atomic_exchange_explicit(&barrier_broken, 1, memory_order_seq_cst)) {
      __atomic_store_n(&cp_hot.pool_asym, 0, __ATOMIC_SEQ_CST);
      cp_warn("membarrier(2) failed after registration (a seccomp filter?): "
              "each event now pays a full barrier, each snapshot a millisecond");
    }
  }
  const struct timespec grace = {0, CP_GRACE_NS};
  nanosleep(&grace, NULL);
}

static void wait_not_busy(cp_pool *p) {
  for (unsigned n = 0; atomic_load_explicit(&p->inside, memory_order_seq_cst) != 0; n++) {
    if (n < CP_LOCK_SPINS) cp_cpu_relax();
    else { n = 0; sched_yield(); }
  }
}

void cp_pool_excl_lock(cp_pool *p) {
  cp_pool_lock(p);
  if (cp_pool_owner(p) == 0) return;   /* locked mode: the lock is all */
  atomic_fetch_add_explicit(&cp_pool_excl_count, 1, memory_order_relaxed);
  atomic_fetch_or_explicit(&p->ctl, CP_CTL_WANT, memory_order_seq_cst);
  barrier_all();
  wait_not_busy(p);
}

void cp_pool_excl_unlock(cp_pool *p) {
  /* WANT only ever set by the lock's holder: clearing it is safe even for
   * a pool that has no owner (it was never set). */
  atomic_fetch_and_explicit(&p->ctl, ~CP_CTL_WANT, memory_order_release);
  cp_pool_unlock(p);
}

void cp_pool_enter_slow(cp_pool *p) {
  atomic_store_explicit(&p->inside, 0u, memory_order_release);
  cp_pool_lock(p);
}

void cp_pool_share(cp_pool *p) {
  cp_pool_excl_lock(p);
  atomic_fetch_or_explicit(&p->ctl, CP_CTL_SHARED, memory_order_relaxed);
  __atomic_store_n(&p->owner, 0, __ATOMIC_RELAXED);
  cp_pool_excl_unlock(p);
}

void cp_pool_claim(cp_pool *p, const void *me) {
  cp_pool_lock(p);   /* a snapshot in locked mode finishes first */
  if (cp_pool_owner(p) == 0 && !(atomic_load_explicit(&p->ctl, memory_order_relaxed) & CP_CTL_SHARED))
    __atomic_store_n(&p->owner, (uintptr_t)me, __ATOMIC_RELAXED);
  cp_pool_unlock(p);
}

void cp_pool_apply(cp_pool *p, const cp_post *m) {
  cp_slot *s = cp_pool_slot(p, m->idx);
  if (!s || s->gen != m->gen) return;   /* handed out again meanwhile, or released */
  if (m->op == CP_POST_REF) {
    cp_pool_ref(p, s, m->idx);
    return;
  }
  cp_pool_parent_done(p, s, m->idx, m->nref, m->dur, m->nkch, m->flags & CP_POSTF_BAD, m->gs, m->ge);
}

void cp_pool_drain(cp_pool *p) {
  const uint32_t tail = atomic_load_explicit(&p->in_tail, memory_order_acquire);
  uint32_t head = p->in_head;
  const cp_post *box = __atomic_load_n(&p->inbox, __ATOMIC_ACQUIRE);
  if (!box) return;
  for (; head != tail; head++) cp_pool_apply(p, &box[head % CP_INBOX]);
  __atomic_store_n(&p->in_head, head, __ATOMIC_RELEASE);
  __atomic_store_n(&p->in_seen, head, __ATOMIC_RELAXED);   /* read outside the pool too (group_takes_posts) */
}

/* The inbox, made once per pool (in_lock held): a one-off set-up
 * (oneoff.h), 20 KiB touched. */
static cp_post *inbox_make(cp_pool *p) {
  cp_post *box = p->inbox;
  if (box || __atomic_load_n(&p->finalized, __ATOMIC_RELAXED)) return box;
  const uint64_t o = cp_oneoff_begin();
  box = calloc(CP_INBOX, sizeof *box);
  __atomic_store_n(&p->inbox, box, __ATOMIC_RELEASE);
  cp_oneoff_end(o);
  return box;
}

void cp_pool_prepare_inbox(cp_pool *p) {
  if (!p) return;
  cp_spin_lock(&p->in_lock);
  (void)inbox_make(p);
  cp_spin_unlock(&p->in_lock);
}

void cp_pool_post(cp_pool *p, const cp_post *m) {
  if (__atomic_load_n(&p->finalized, __ATOMIC_RELAXED)) return;   /* its slots are gone (or going) */
  if (cp_pool_owner(p) != 0) {
    cp_spin_lock(&p->in_lock);
    /* made at the first post where not made ahead (cp_pool_prepare_inbox) */
    cp_post *box = inbox_make(p);
    const uint32_t tail = atomic_load_explicit(&p->in_tail, memory_order_relaxed);
    if (box && tail - __atomic_load_n(&p->in_head, __ATOMIC_ACQUIRE) < CP_INBOX) {
      box[tail % CP_INBOX] = *m;
      atomic_store_explicit(&p->in_tail, tail + 1, memory_order_release);
      cp_spin_unlock(&p->in_lock);
      return;
    }
    cp_spin_unlock(&p->in_lock);
    atomic_fetch_add_explicit(&cp_pool_posts_full, 1, memory_order_relaxed);
  }
  /* locked mode, or the inbox full (or not to be had): applied here, the
   * queue first (order) */
  cp_pool_excl_lock(p);
  cp_pool_drain(p);
  cp_pool_apply(p, m);
  cp_pool_excl_unlock(p);
}

void cp_pool_drop_inbox(cp_pool *p) {
  cp_spin_lock(&p->in_lock);   /* no poster is writing into it */
  cp_post *box = p->inbox;
  __atomic_store_n(&p->inbox, NULL, __ATOMIC_RELEASE);
  cp_spin_unlock(&p->in_lock);
  free(box);
}

/* The slot at idx without the pool: NULL when there is none (released,
 * or not yet grown that far).  Chunk arrays and chunks are never freed
 * while the process runs (pool.c), so what is read is slot memory. */
static cp_slot *peek_slot(cp_pool *p, uint32_t idx) {
  cp_slot *s0 = __atomic_load_n(&p->slots0, __ATOMIC_ACQUIRE);
  if (s0 && idx < __atomic_load_n(&p->cap0, __ATOMIC_RELAXED)) return &s0[idx];
  const uint32_t n = __atomic_load_n(&p->nchunks, __ATOMIC_ACQUIRE);
  cp_slot **arr = __atomic_load_n(&p->chunks, __ATOMIC_ACQUIRE);
  if (!arr || idx >= CP_POOL_FB_BASE) return NULL;
  const uint32_t c = idx / p->chunk_size;
  if (c >= n) return NULL;
  cp_slot *ch = __atomic_load_n(&arr[c], __ATOMIC_RELAXED);
  return ch ? &ch[idx % p->chunk_size] : NULL;
}

/* A slot's key word, as cp_pool_peek_live reads it. */
static inline uint64_t key_word(const cp_slot *s) {
  return __atomic_load_n((const uint64_t *)(const void *)s, __ATOMIC_ACQUIRE);
}

int cp_pool_peek_parent(cp_pool *p, uint32_t idx, uint32_t gen8, uint32_t path, int kch, cp_parent_view *v,
                        int *took_hold) {
  *took_hold = 0;
  if (idx >= CP_POOL_FB_BASE) return -1;   /* a fallback slot: under the pool */
  cp_slot *s = peek_slot(p, idx);
  if (!s) return 0;
  const uint64_t want = (uint64_t)(gen8 & 0xFFu) | (uint64_t)(path & 0xFFFFu) << 32;
  const uint64_t key = key_word(s);
  if ((key & 0x0000FFFF000000FFull) != want) return 0;
  v->live = (uint32_t)(key >> 48) & 1u;
  v->gen = __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE);
  v->kc_epoch = __atomic_load_n(&s->kc_epoch, __ATOMIC_RELAXED);
  v->kc_seq = __atomic_load_n(&s->kc_seq, __ATOMIC_RELAXED);
  v->acls = __atomic_load_n(&s->acls, __ATOMIC_RELAXED);
  v->kc_n = __atomic_load_n(&s->kc_n, __ATOMIC_RELAXED);
  v->first = __atomic_load_n(&s->span_first, __ATOMIC_RELAXED);
  if (kch) *took_hold = cp_slot_take_hold(s);
  if (__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) != v->gen) {   /* handed out again meanwhile */
    if (*took_hold) __atomic_fetch_add(&s->hold, 1, __ATOMIC_RELAXED);   /* not ours: give it back */
    *took_hold = 0;
    return 0;
  }
  return 1;
}

uint64_t cp_pool_peek_kc_seq(cp_pool *p, uint32_t idx, uint32_t gen) {
  const cp_slot *s = peek_slot(p, idx);
  if (!s) return 0;
  const uint64_t seq = __atomic_load_n(&s->kc_seq, __ATOMIC_RELAXED);
  return __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) == gen ? seq : 0;
}
