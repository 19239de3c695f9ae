/*
 * test_pool.c — the per-communicator event pool (src/pool.c): round-robin
 * order, growth by whole chunks, the fallback allocation and its set, and
 * reuse detection by generation, first on the pool directly, then through
 * the plugin's callbacks (a stale handle is refused and counted).  Also
 * runs two threads on two communicators and one communicator from two
 * threads (for ThreadSanitizer), and prints the rough cost per event.
 * Last, the pool lock's slow path: a waiter behind a holder that does not
 * let go yields the CPU instead of spinning its whole time slice.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include "tap.h"
#include "h1_util.h"
#include "pool.h"
#include "handle.h"

static uint64_t mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void test_direct(void) {
  cp_pool *p = cp_pool_create(7, 4, 100);
  ok(p != NULL, "pool created");
  uint32_t idx[8];
  cp_slot *s[8];
  for (int i = 0; i < 3; i++) s[i] = cp_pool_alloc(p, &idx[i]);
  ok(idx[0] == 0 && idx[1] == 1 && idx[2] == 2, "first slots handed out in order 0,1,2");
  is_u(p->capacity, 4, "one chunk of 4");
  cp_pool_release(p, s[0], idx[0]);
  s[3] = cp_pool_alloc(p, &idx[3]);
  is_u(idx[3], 3, "round robin: after slot 2 comes 3, not the just-freed 0");
  s[4] = cp_pool_alloc(p, &idx[4]);
  is_u(idx[4], 0, "round robin wraps to the free slot 0");
  ok(s[4]->gen == 2 && s[4]->live, "reused slot 0 has generation 2 and is live");
  is_u(p->capacity, 4, "no growth while a slot was free");
  s[5] = cp_pool_alloc(p, &idx[5]);
  is_u(p->capacity, 8, "all 4 in use: pool grew by one chunk");
  is_u(idx[5], 4, "growth continues round robin in the new chunk");
  is_u(p->nchunks, 2, "two chunks");
  ok(cp_pool_slot(p, 4) == s[5] && cp_pool_slot(p, 8) == NULL, "slot lookup by index, out of range is NULL");

  /* generation: a handle made before a reuse no longer matches */
  uint64_t h_old = cp_handle_make(3, 7, idx[1], s[1]->gen);
  cp_pool_release(p, s[1], idx[1]);
  for (int i = 0; i < 8; i++) {   /* cycle until slot 1 is handed out again */
    uint32_t j;
    cp_slot *t = cp_pool_alloc(p, &j);
    if (j == idx[1]) break;
    cp_pool_release(p, t, j);
  }
  cp_handle_fields f;
  ok(cp_handle_decode(h_old, &f) && (cp_pool_slot(p, f.slot)->gen & 0xFF) != f.gen,
     "reuse detected: old handle's generation differs from the slot's");

  /* fallback: growth refused */
  cp_pool *q = cp_pool_create(8, 2, 100);
  cp_pool_set_max_chunks(q, 1);
  uint32_t a, b, c;
  cp_slot *sa = cp_pool_alloc(q, &a), *sb = cp_pool_alloc(q, &b);
  cp_slot *sc = cp_pool_alloc(q, &c);
  ok(sa && sb && sc, "third event gets a slot although growth failed");
  ok(sc && sc->fallback == 1 && c >= CP_POOL_FB_BASE, "it is a flagged fallback slot in the fallback index range");
  ok(cp_pool_slot(q, c) == sc, "fallback slot found by index (no pointer from NCCL needed)");
  is_u(q->fallbacks, 1, "fallback counted");
  cp_pool_release(q, sc, c);
  ok(cp_pool_slot(q, c) == NULL, "fallback slot freed at stop, not returned to the pool");
  uint32_t n = 0, k;
  while (cp_pool_alloc(q, &k)) n++;
  is_u(n, CP_POOL_FB_MAX, "fallback set holds CP_POOL_FB_MAX events");
  is_u(q->exhausted, 1, "then allocation fails and is counted");
  cp_pool_destroy(q);
  cp_pool_destroy(p);
}

static void test_plugin_reuse(void) {
  void *ctx = h1_init(1111, 0);
  ok(ctx != NULL, "communicator initialised");
  void *g = h1_start(ctx, ncclProfileGroupApi, NULL, NULL);
  ok(g != NULL && ((uintptr_t)g >> 60) == 0xC, "handle carries tag 0xC in the top bits");
  ncclProfiler_v5.stopEvent(g);
  /* pool size 2: after two more events slot of g is handed out again */
  for (int i = 0; i < 4; i++) ncclProfiler_v5.stopEvent(h1_start(ctx, ncclProfileGroupApi, NULL, NULL));
  uint64_t before = h1_bad_calls();
  ncclProfiler_v5.stopEvent(g);
  is_u(h1_bad_calls(), before + 1, "stop on a handle whose slot was reused is refused and counted");
  collprof_snapshot s;
  collprof_snapshot_take(&s);
  const collprof_path_stat *ps = h1_find(&s, "GroupApi");
  ok(ps && ps->calls == 5, "the stale stop did not add a call (GroupApi calls %llu)",
     ps ? (unsigned long long)ps->calls : 0ULL);
  collprof_snapshot_free(&s);
}

typedef struct { void *ctx; int n; double ns; } worker_arg;
static void *worker(void *p) {
  worker_arg *w = p;
  uint64_t t0 = mono();
  for (int i = 0; i < w->n; i++) {
    void *g = h1_start(w->ctx, ncclProfileGroupApi, NULL, NULL);
    void *c = h1_start(w->ctx, ncclProfileCollApi, g, "AllReduce");
    ncclProfiler_v5.recordEventState(g, ncclProfilerGroupStartApiStop, NULL);
    ncclProfiler_v5.stopEvent(c);
    ncclProfiler_v5.stopEvent(g);
  }
  w->ns = (double)(mono() - t0) / (2.0 * w->n);
  return NULL;
}

static void test_threads(void) {
  void *c1 = h1_init(2222, 0), *c2 = h1_init(3333, 1);
  const char *san = getenv("SAN");
  int n = (san && *san) || getenv("COLLPROF_UNIT_SLOW") ? 2000 : 20000;
  worker_arg one = {c1, n, 0};
  worker(&one);
  worker_arg a = {c1, n, 0}, b = {c2, n, 0};
  pthread_t ta, tb;
  uint64_t t0 = mono();
  pthread_create(&ta, NULL, worker, &a);
  pthread_create(&tb, NULL, worker, &b);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  double wall = (double)(mono() - t0);
  diag("one thread: %.1f ns/event (trace off, one state per 2 events); two threads on two comms: "
       "%.1f / %.1f ns/event, throughput scaling %.2fx", one.ns, a.ns, b.ns,
       (2.0 * 2 * n) / wall * one.ns);
  /* one communicator from two threads: application + proxy */
  worker_arg x = {c1, n / 4, 0}, y = {c1, n / 4, 0};
  pthread_create(&ta, NULL, worker, &x);
  pthread_create(&tb, NULL, worker, &y);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  collprof_snapshot s;
  collprof_snapshot_take(&s);
  const collprof_path_stat *ps = h1_find(&s, "GroupApi/CollApi:AllReduce");
  uint64_t want = (uint64_t)n * 3 + 2 * (uint64_t)(n / 4);
  ok(ps && ps->calls == want, "every concurrent event counted once (%llu of %llu)",
     ps ? (unsigned long long)ps->calls : 0ULL, (unsigned long long)want);
  is_u(s.unterminated, 0, "no slot left live");
  collprof_snapshot_free(&s);
}

/* A holder that keeps the lock 50 ms (as a preempted one would): the
 * waiter gets the lock once it is let go, and has yielded meanwhile. */
typedef struct { cp_pool *p; atomic_int got; } lock_arg;
static void *lock_waiter(void *v) {
  lock_arg *a = v;
  cp_pool_lock(a->p);
  atomic_store(&a->got, 1);
  cp_pool_unlock(a->p);
  return NULL;
}
static void test_lock_yields(void) {
  cp_pool *p = cp_pool_create(9, 4, 1);
  lock_arg a = {p, 0};
  const uint64_t y0 = atomic_load(&cp_pool_lock_yields);
  cp_pool_lock(p);
  pthread_t t;
  pthread_create(&t, NULL, lock_waiter, &a);
  const struct timespec ms50 = {0, 50 * 1000 * 1000};
  nanosleep(&ms50, NULL);
  ok(atomic_load(&a.got) == 0, "a waiter does not get a held pool lock");
  cp_pool_unlock(p);
  pthread_join(t, NULL);
  ok(atomic_load(&a.got) == 1, "it gets the lock once it is let go");
  const uint64_t dy = atomic_load(&cp_pool_lock_yields) - y0;
  ok(dy > 0, "it yielded the CPU while waiting 50 ms (%llu yields), not spun all along",
     (unsigned long long)dy);
  cp_pool_lock(p);   /* uncontended: no yield */
  cp_pool_unlock(p);
  is_u(atomic_load(&cp_pool_lock_yields) - y0, dy, "an uncontended lock does not yield");
  cp_pool_destroy(p);
}

int main(void) {
  h1_env("2");
  test_direct();
  test_plugin_reuse();
  test_threads();
  test_lock_yields();
  return done_testing();
}
