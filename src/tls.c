/*
 * tls.c — per-thread blocks (see tls.h).  Allocation and recycling happen
 * once per thread, under a mutex; the hot path only reads the TLS pointer.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#pragma GCC visibility push(hidden)
#include "tls.h"
#include "config.h"
#include "mix64.h"
#include "oneoff.h"
#include "profile.h"

__thread cp_tls_hot_t cp_tls_hot __attribute__((tls_model("initial-exec"), aligned(64)));

static pthread_mutex_t thr_mu = PTHREAD_MUTEX_INITIALIZER;
static cp_thr *_Atomic thr_head;
static cp_thr *thr_free;
static pthread_key_t thr_key;
static pthread_once_t thr_key_once = PTHREAD_ONCE_INIT;
static _Atomic uint64_t thr_mem;
_Atomic uint64_t cp_oneoff_total_ns;   /* oneoff.h: beside the per-thread sums (cp_tls_hot) */
cp_thr cp_thr_emergency;   /* when calloc fails: shared, numbers still atomic (tls.h) */

void (*cp_thr_exit_hook)(cp_thr *t);

static void thr_exit(void *p) {
  cp_thr *t = p;
  if (!t || t == &cp_thr_emergency) return;
  void (*hook)(cp_thr *) = __atomic_load_n(&cp_thr_exit_hook, __ATOMIC_ACQUIRE);
  if (hook && cp_tls_thr == t) hook(t);   /* still this thread's block (tls.h) */
  cp_tls_thr = NULL;
  pthread_mutex_lock(&thr_mu);
  t->next_free = thr_free;
  thr_free = t;
  pthread_mutex_unlock(&thr_mu);
}

static void thr_key_init(void) { pthread_key_create(&thr_key, thr_exit); }

void *cp_calloc_lines(size_t size) {
  const uint64_t o = cp_oneoff_begin();   /* oneoff.h: set-ups are timed whole */
  size = (size + 63) & ~(size_t)63;
  void *p = aligned_alloc(64, size ? size : 64);
  if (p) memset(p, 0, size ? size : 64);
  cp_oneoff_end(o);
  return p;
}

/* A new zeroed block on the list of all blocks (its numbers, all 0,
 * count in snapshots), with its first profile chunk (paths 0-255, 32
 * KiB), which its thread's first state or stop would make (profile.c):
 * the thread that inits the first communicator gets its block there (the
 * start-up cost measure, selfcost.c, is its first event), not from the
 * spares, and on its first call zeroed the chunk in a state callback, 8
 * page faults.  thr_mu held.  NULL: out of memory. */
static cp_thr *block_new(void) {
  cp_thr *t = cp_calloc_lines(sizeof *t);
  if (t) {
    (void)cp_prof_ent_slow(t, 0);
    atomic_fetch_add_explicit(&thr_mem, sizeof *t, memory_order_relaxed);
    t->next = atomic_load_explicit(&thr_head, memory_order_relaxed);
    atomic_store_explicit(&thr_head, t, memory_order_release);
  }
  return t;
}

#define SPARE_MAX 16   /* free blocks kept ahead, at most */
void cp_thr_prepare(unsigned threads) {
  const uint64_t o = cp_oneoff_begin();   /* oneoff.h */
  pthread_mutex_lock(&thr_mu);
  unsigned spare = 0, all = 0;
  for (cp_thr *t = thr_free; t; t = t->next_free) spare++;
  for (cp_thr *t = atomic_load_explicit(&thr_head, memory_order_relaxed); t; t = t->next)
    all += t != &cp_thr_emergency;
  const unsigned used = all - spare;   /* blocks of live threads (an exited one's is free again) */
  for (; spare < SPARE_MAX && spare + used < threads; spare++) {
    cp_thr *t = block_new();
    if (!t) break;
    t->next_free = thr_free;
    thr_free = t;
  }
  pthread_mutex_unlock(&thr_mu);
  cp_oneoff_end(o);
}

cp_thr *cp_thr_slow(void) {
  const uint64_t o = cp_oneoff_begin();   /* oneoff.h */
  pthread_once(&thr_key_once, thr_key_init);
  pthread_mutex_lock(&thr_mu);
  cp_thr *t = thr_free;
  if (t) {
    thr_free = t->next_free;
    t->next_free = NULL;
  } else {
    t = block_new();
  }
  pthread_mutex_unlock(&thr_mu);
  if (!t) {
    t = &cp_thr_emergency;
    pthread_mutex_lock(&thr_mu);
    if (!cp_thr_emergency.next && atomic_load_explicit(&thr_head, memory_order_relaxed) != &cp_thr_emergency) {
      cp_thr_emergency.next = atomic_load_explicit(&thr_head, memory_order_relaxed);
      atomic_store_explicit(&thr_head, &cp_thr_emergency, memory_order_release);
    }
    pthread_mutex_unlock(&thr_mu);
  }
  t->tid = (int)syscall(SYS_gettid);
  t->sampled = 0;
  t->hs_mode = t->hs_force = 0;   /* a reused block times its new thread's first call */
  t->hs_force_pe = NULL;
  t->hs_predecided = 0;
  t->hs_n = 0;
  t->hs_rand = 0;   /* seeded at the first draw (call_modes.h hs_rand) */
  t->seed = 0;
  cp_tls_thr = t;
  if (t != &cp_thr_emergency) pthread_setspecific(thr_key, t);
  cp_oneoff_end(o);
  return t;
}

static _Atomic uint64_t thr_draw_order;   /* cp_thr_seed: threads that drew so far */

uint64_t cp_thr_seed(cp_thr *t) {
  if (__builtin_expect(t->seed != 0, 1)) return t->seed;
  const cp_config *c = cp_config_get();
  uint64_t s = c->sample_seed_set
    ? cp_mix64(c->sample_seed ^ cp_mix64(1 + atomic_fetch_add_explicit(&thr_draw_order, 1, memory_order_relaxed)))
    : cp_mix64((uint64_t)(uint32_t)t->tid);   /* tids are unique on a host: no getpid() call here */
  return t->seed = s ? s : 1;
}

cp_thr *cp_thr_all(void) { return atomic_load_explicit(&thr_head, memory_order_acquire); }

void cp_thr_after_fork(void) {
  if (cp_tls_thr) cp_tls_thr->tid = (int)syscall(SYS_gettid);
  /* contexts get a new salt in the child: forget decoded ones */
  for (cp_thr *t = cp_thr_all(); t; t = t->next) { t->last_ctx = 0; t->last_comm = NULL; t->last_lpool = NULL; }
}

uint64_t cp_thr_memory(void) {
  uint64_t m = atomic_load_explicit(&thr_mem, memory_order_relaxed);
  for (cp_thr *t = cp_thr_all(); t; t = t->next)
    for (int i = 0; i < CP_PROF_NCHUNK; i++)
      if (__atomic_load_n(&t->prof[i], __ATOMIC_ACQUIRE)) m += CP_PROF_CHUNK * sizeof(cp_prof_ent);
  return m;
}
