/*
 * test_pool_owner.c — a pool's owner without the lock, and everyone else
 * (src/pool_owner.c): exclusive access waits for the owner to leave and
 * the owner waits for it; posts wait in the inbox until the pool's next
 * holder applies them, a stale one is dropped, a full inbox is emptied by
 * the poster; a shared pool is locked for all; a KernelCh takes a
 * parent's hold without the pool.  Everything twice: with membarrier (when
 * this machine has it) and with the owner's own full barrier instead.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "tap.h"
#define is_i(got, want, ...) is_u((uint64_t)(int64_t)(got), (uint64_t)(int64_t)(want), __VA_ARGS__)
#include "h1_util.h"
#include "pool.h"
#include "pool_owner.h"

static uint64_t mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static void sleep_ms(int ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}

static int me_tag;   /* stands for the owner's cp_thr */

typedef struct excl_arg {
  cp_pool *p;
  _Atomic int got, release;
  uint64_t waited_ns;
} excl_arg;

/* Takes exclusive access, says so, holds it until told to let go. */
static void *excl_holder(void *v) {
  excl_arg *a = v;
  const uint64_t t0 = mono();
  cp_pool_excl_lock(a->p);
  a->waited_ns = mono() - t0;
  atomic_store(&a->got, 1);
  while (!atomic_load(&a->release)) sleep_ms(1);
  cp_pool_excl_unlock(a->p);
  return NULL;
}
/* Tells an excl_holder to let go 50 ms from now. */
static void *release_later(void *v) {
  sleep_ms(50);
  atomic_store(&((excl_arg *)v)->release, 1);
  return NULL;
}

static void test_exclusion(const char *mode) {
  cp_pool *p = cp_pool_create(9, 16, 100);
  cp_pool_claim(p, &me_tag);
  ok(cp_pool_owner(p) == (uintptr_t)&me_tag, "%s: the claiming thread owns the pool", mode);
  int own = cp_pool_enter(p, &me_tag);
  is_i(own, 1, "%s: its owner holds it without the lock", mode);
  is_u(atomic_load(&p->lock), 0, "%s: the lock word is untouched", mode);

  /* exclusive access waits while the owner is inside */
  excl_arg a = {.p = p};
  pthread_t th, rel;
  pthread_create(&th, NULL, excl_holder, &a);
  sleep_ms(50);
  is_i(atomic_load(&a.got), 0, "%s: exclusive access waits while the owner is inside", mode);
  cp_pool_leave(p, own);
  while (!atomic_load(&a.got)) sleep_ms(1);
  ok(a.waited_ns >= 40000000ull, "%s: ... and has it once the owner left (waited %.0f ms)", mode,
     a.waited_ns / 1e6);
  atomic_store(&a.release, 1);
  pthread_join(th, NULL);

  /* the owner waits while another thread has exclusive access */
  excl_arg b = {.p = p};
  pthread_create(&th, NULL, excl_holder, &b);
  while (!atomic_load(&b.got)) sleep_ms(1);
  pthread_create(&rel, NULL, release_later, &b);
  const uint64_t t0 = mono();
  own = cp_pool_enter(p, &me_tag);
  const uint64_t waited = mono() - t0;
  is_i(own, 0, "%s: with another thread inside, the owner takes the lock", mode);
  ok(waited >= 40000000ull, "%s: ... after that thread let go (waited %.0f ms)", mode, waited / 1e6);
  cp_pool_leave(p, own);
  pthread_join(rel, NULL);
  pthread_join(th, NULL);
  own = cp_pool_enter(p, &me_tag);
  is_i(own, 1, "%s: then without the lock again", mode);
  cp_pool_leave(p, own);

  /* a shared pool is locked for everybody, its former owner included */
  cp_pool_share(p);
  ok(cp_pool_owner(p) == 0, "%s: shared: no owner", mode);
  own = cp_pool_enter(p, &me_tag);
  is_i(own, 0, "%s: shared: the former owner takes the lock", mode);
  is_u(atomic_load(&p->lock), 1, "%s: ... which is held", mode);
  cp_pool_leave(p, own);
  cp_pool_claim(p, &me_tag);
  ok(cp_pool_owner(p) == 0, "%s: a shared pool cannot be claimed again", mode);
  cp_pool_destroy(p);
}

typedef struct post_arg {
  cp_pool *p;
  cp_post m;
  int n;
} post_arg;
static void *poster(void *v) {
  post_arg *a = v;
  for (int i = 0; i < a->n; i++) cp_pool_post(a->p, &a->m);
  return NULL;
}
/* Posts from another thread (the caller waits for them all). */
static void post_from_thread(cp_pool *p, const cp_post *m, int n) {
  post_arg a = {p, *m, n};
  pthread_t th;
  pthread_create(&th, NULL, poster, &a);
  pthread_join(th, NULL);
}

/* A pool owned by me_tag with one live Coll slot on path 5, held by its
 * owner (*own: cp_pool_enter's answer). */
static cp_pool *pool_with_coll(uint32_t chunk, cp_slot **s, uint32_t *idx, int *own) {
  cp_pool *p = cp_pool_create(9, chunk, 100);
  cp_pool_claim(p, &me_tag);
  *own = cp_pool_enter(p, &me_tag);
  *s = cp_pool_alloc(p, idx);
  (*s)->type = 2;   /* a Coll */
  cp_slot_set_path(*s, 5);
  return p;
}

static void test_posts(const char *mode) {
  int own;
  uint32_t idx;
  cp_slot *s;
  cp_pool *p = pool_with_coll(4096, &s, &idx, &own);
  const uint32_t gen = s->gen;
  cp_pool_leave(p, own);

  const cp_post ref = {.idx = idx, .gen = gen, .op = CP_POST_REF};
  post_from_thread(p, &ref, 3);
  is_u(s->refcnt, 0, "%s: posted references wait in the inbox", mode);
  own = cp_pool_enter(p, &me_tag);
  is_u(s->refcnt, 3, "%s: ... and count once the owner comes in", mode);
  cp_pool_leave(p, own);

  const cp_post stale = {.idx = idx, .gen = gen + 1, .op = CP_POST_REF};
  post_from_thread(p, &stale, 1);
  const cp_post done = {.idx = idx, .gen = gen, .op = CP_POST_UNREF,
                        .nkch = 1, .nref = 1, .dur = 7, .gs = 100, .ge = 250};
  const cp_post done2 = {.idx = idx, .gen = gen, .op = CP_POST_UNREF,
                         .nkch = 1, .nref = 1, .dur = 5, .gs = 90, .ge = 200};
  post_from_thread(p, &done, 1);
  post_from_thread(p, &done2, 1);
  own = cp_pool_enter(p, &me_tag);
  is_u(s->refcnt, 1, "%s: a stale post is dropped, two given back", mode);
  ok(s->span_n == 2 && s->span_min == 90 && s->span_max == 250, "%s: their GPU span is the parent's (%llu..%llu)",
     mode, (unsigned long long)s->span_min, (unsigned long long)s->span_max);
  is_u(s->child_ns, 12, "%s: their time is the live parent's child time", mode);
  cp_pool_leave(p, own);

  /* more posts than the inbox holds, the owner away: the poster empties it */
  const uint64_t full0 = atomic_load(&cp_pool_posts_full);
  const int n = (int)CP_INBOX + 40;
  post_from_thread(p, &ref, n);
  const uint64_t full = atomic_load(&cp_pool_posts_full) - full0;
  ok(full >= 1, "%s: a full inbox: the poster applied it (%llu times)", mode, (unsigned long long)full);
  own = cp_pool_enter(p, &me_tag);
  is_u(s->refcnt, 1 + (uint32_t)n, "%s: ... and no post was lost", mode);
  cp_pool_leave(p, own);

  /* finalize: drained, then posts are dropped */
  cp_pool_excl_lock(p);
  cp_pool_drain(p);
  __atomic_store_n(&p->finalized, 1, __ATOMIC_RELAXED);
  cp_pool_release_chunks(p);
  cp_pool_drop_inbox(p);
  cp_pool_excl_unlock(p);
  post_from_thread(p, &ref, 3);
  ok(p->inbox == NULL && atomic_load(&p->in_tail) == atomic_load(&p->in_head),
     "%s: after finalize posts are dropped", mode);
  cp_pool_destroy(p);
}

static void test_peek(const char *mode) {
  int own;
  uint32_t idx;
  cp_slot *s;
  cp_pool *p = pool_with_coll(16, &s, &idx, &own);
  cp_pool_hold(p, s, idx, 2);
  __atomic_store_n(&s->kc_epoch, 77, __ATOMIC_RELAXED);
  __atomic_store_n(&s->kc_seq, 3, __ATOMIC_RELAXED);
  cp_pool_leave(p, own);
  cp_parent_view v;
  int took, r[3], t[3];
  for (int i = 0; i < 3; i++) {
    r[i] = cp_pool_peek_parent(p, idx, s->gen & 0xFF, 5, 1, &v, &took);
    t[i] = took;
  }
  ok(r[0] == 1 && r[1] == 1 && r[2] == 1, "%s: the parent read without the pool", mode);
  ok(t[0] && t[1] && !t[2], "%s: two KernelCh take its two holds, a third does not", mode);
  ok(v.gen == s->gen && v.kc_epoch == 77 && v.kc_seq == 3, "%s: generation, epoch and kc_seq as written", mode);
  is_u(v.live, 1, "%s: a live parent reads as live", mode);
  cp_slot_set_live(s, 0);
  is_i(cp_pool_peek_parent(p, idx, s->gen & 0xFF, 5, 0, &v, &took), 1, "%s: a stopped parent is still found", mode);
  is_u(v.live, 0, "%s: ... and reads as stopped", mode);
  cp_slot_set_live(s, 1);
  is_i(cp_pool_peek_parent(p, idx, (s->gen + 1) & 0xFF, 5, 0, &v, &took), 0, "%s: another generation: no", mode);
  is_i(cp_pool_peek_parent(p, idx, s->gen & 0xFF, 6, 0, &v, &took), 0, "%s: another path: no", mode);
  is_i(cp_pool_peek_parent(p, CP_POOL_FB_BASE, 1, 5, 0, &v, &took), -1, "%s: a fallback slot: ask the pool", mode);
  ok(cp_pool_peek_kc_seq(p, idx, s->gen) == 3 && cp_pool_peek_kc_seq(p, idx, s->gen + 1) == 0,
     "%s: kc_seq only for the right generation", mode);
  cp_pool_destroy(p);
}

/* membarrier registered, then failing (as under a seccomp filter the
 * application installs later): the first exclusive access turns the
 * process over to the owner's own barrier, says so once, and exclusion
 * still holds (test_exclusion waits for the owner inside). */
static void test_membarrier_fails(void) {
  setenv("COLLPROF_TEST_MEMBARRIER_FAIL", "1", 1);
  cp_pool_owner_after_fork();   /* registers anew, reading the variable */
  is_i(cp_hot.pool_asym, 1, "failing membarrier: registered first");
  char path[] = "/tmp/collprof-mbfail-XXXXXX";
  const int fd = mkstemp(path);
  fflush(stderr);
  const int saved = dup(2);
  dup2(fd, 2);
  test_exclusion("failing membarrier");
  test_posts("failing membarrier");
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  char buf[4096] = {0};
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  close(fd);
  unlink(path);
  int lines = 0;
  for (const char *q = buf; n > 0 && (q = strstr(q, "collprof: membarrier(2) failed")) != NULL; q++) lines++;
  is_i(lines, 1, "failing membarrier: one line on stderr");
  is_i(cp_hot.pool_asym, 0, "failing membarrier: the owners fence themselves from then on");
  unsetenv("COLLPROF_TEST_MEMBARRIER_FAIL");
  cp_pool_owner_after_fork();
}

int main(void) {
  cp_pool_owner_init();
  const int asym = cp_hot.pool_asym;
  diag("membarrier %s on this machine", asym ? "registered" : "not available");
  if (asym) {
    test_exclusion("membarrier");
    test_posts("membarrier");
    test_peek("membarrier");
  }
  cp_hot.pool_asym = 0;   /* the owner's own barrier: as where membarrier is missing */
  test_exclusion("no membarrier");
  test_posts("no membarrier");
  test_peek("no membarrier");
  cp_hot.pool_asym = asym;
  if (asym) test_membarrier_fails();
  else diag("membarrier not available: its failure after registration not tested");
  done_testing();
}
