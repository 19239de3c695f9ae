/*
 * test_lockfree_state.c — the state callback's lock-free common case
 * (event_state.c, cp_core_state) and what makes it safe: the pool's lock-free
 * slot check (pool.h, cp_pool_peek_live) and the chunk cache that keeps a
 * finalized communicator's slot memory mapped (pool.c).
 *
 * On a pool directly: what the check answers for a live, a stopped, a
 * reused and an out-of-range slot and after release; that released chunks
 * are taken by the next pool that grows (memory bounded by the peak) and
 * come back zeroed; that the old first chunk stays readable after release
 * (the address sanitizer run fails here if it were freed).  Through the
 * plugin: a thread recording states without pause while another finalizes
 * the communicator; nothing crashes, every state is either counted or a
 * bad call, and the thread sanitizer run finds no race.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "tap.h"
#include "h1_util.h"
#include "handle.h"
#include "pool.h"

#define is_i(got, want, ...) is_u((uint64_t)(int64_t)(got), (uint64_t)(int64_t)(want), __VA_ARGS__)

static void test_peek(void) {
  cp_pool *p = cp_pool_create(7, 4, 16);
  uint32_t idx[6];
  cp_slot *s[6];
  for (int i = 0; i < 6; i++) {
    s[i] = cp_pool_alloc(p, &idx[i]);
    if (s[i]) cp_slot_set_path(s[i], 3);
  }
  ok(s[0] && s[5] && idx[4] >= 4, "six slots, the last two in a second chunk of 4");
  const uint64_t h0 = cp_handle_make(3, 7, idx[0], s[0]->gen);
  is_i(cp_pool_peek_live(p, idx[0], cp_handle_key(h0)), 1, "live slot: its handle matches");
  is_i(cp_pool_peek_live(p, idx[0], cp_handle_key(cp_handle_make(4, 7, idx[0], s[0]->gen))), 0,
       "another path: no match");
  const uint64_t h4 = cp_handle_make(3, 7, idx[4], s[4]->gen);
  is_i(cp_pool_peek_live(p, idx[4], cp_handle_key(h4)), -1, "slot outside the first chunk: the lock decides");
  cp_pool_release(p, s[0], idx[0]);
  is_i(cp_pool_peek_live(p, idx[0], cp_handle_key(h0)), 0, "stopped: no match");
  /* hand slot 0 out again (round robin: run through the rest first) */
  uint32_t j = 0;
  cp_slot *r = NULL;
  for (int n = 0; n < 64 && (!r || j != idx[0]); n++) {
    if (r && j != idx[0]) cp_pool_release(p, r, j);
    r = cp_pool_alloc(p, &j);
    if (r) cp_slot_set_path(r, 3);
  }
  ok(r && j == idx[0], "slot 0 handed out again");
  is_i(cp_pool_peek_live(p, idx[0], cp_handle_key(h0)), 0, "reused with a new generation: the old handle does not match");
  const uint64_t k1 = cp_slot_key(s[1]);
  cp_pool_lock(p);
  cp_pool_release_chunks(p);
  cp_pool_unlock(p);
  is_i(cp_pool_peek_live(p, idx[1], k1), -1, "released pool: the lock decides (and finds no slot)");
  cp_pool_destroy(p);
}

static void test_chunk_cache(void) {
  const uint64_t c0 = cp_pool_cache_bytes();
  cp_pool *a = cp_pool_create(11, 8, 16);
  uint32_t idx;
  cp_slot *s = cp_pool_alloc(a, &idx);
  if (s) cp_slot_set_path(s, 2);
  cp_slot *first = a->slots0;
  const uint64_t key = s ? cp_slot_key(s) : 0;
  cp_pool_lock(a);
  cp_pool_release_chunks(a);
  cp_pool_unlock(a);
  is_u(cp_pool_cache_bytes() - c0, 8 * sizeof(cp_slot), "a released chunk is kept in the cache");
  /* The old first chunk is still mapped and readable: a lock-free reader
   * that loaded it before the release may still look at it. */
  uint64_t w;
  memcpy(&w, first, sizeof w);
  ok((w & 0x0001FFFF000000FFull) == key, "the released first chunk is still readable, unchanged");
  cp_pool *b = cp_pool_create(12, 8, 16);
  cp_slot *t = cp_pool_alloc(b, &idx);
  ok(t && b->slots0 == first, "the next pool that grows takes the cached chunk");
  is_u(cp_pool_cache_bytes(), c0, "and the cache is empty again");
  ok(t && t->gen == 1 && t->refcnt == 0 && t->lru_prev == CP_SLOT_NIL, "the chunk comes back zeroed (generation 1)");
  cp_pool *c = cp_pool_create(13, 16, 16);   /* another chunk size: a fresh chunk */
  cp_slot *u = cp_pool_alloc(c, &idx);
  ok(u && c->slots0 != first, "a pool with another chunk size gets its own memory");
  cp_pool_destroy(b);
  cp_pool_destroy(c);
  cp_pool_destroy(a);
}

/* A communicator cycle repeated: the cache keeps memory at the peak. */
static void test_bounded(void) {
  const uint64_t c0 = cp_pool_cache_bytes();
  uint64_t peak = 0;
  for (int i = 0; i < 50; i++) {
    cp_pool *p = cp_pool_create(20, 8, 16);
    uint32_t idx;
    for (int k = 0; k < 20; k++) cp_pool_alloc(p, &idx);   /* three chunks, all live */
    cp_pool_lock(p);
    cp_pool_release_chunks(p);
    cp_pool_unlock(p);
    if (cp_pool_cache_bytes() - c0 > peak) peak = cp_pool_cache_bytes() - c0;
    cp_pool_destroy(p);
  }
  is_u(peak, 3 * 8 * sizeof(cp_slot), "50 create/release cycles: the cache never holds more than one cycle's chunks");
}

/* States without pause on one thread while the main thread finalizes. */
typedef struct spin { void *h; _Atomic int go, done; _Atomic uint64_t n; } spin;
static void *stater(void *arg) {
  spin *sp = arg;
  ncclProfilerEventStateArgs_v5_t a;
  memset(&a, 0, sizeof a);
  a.transSize = 64;
  while (!atomic_load(&sp->go)) {}
  while (!atomic_load(&sp->done)) {   /* until the finalize returned */
    ncclProfiler_v5.recordEventState(sp->h, ncclProfilerProxyStepSendWait, &a);
    atomic_fetch_add(&sp->n, 1);
  }
  for (int i = 0; i < 1000; i++)   /* surely after it */
    ncclProfiler_v5.recordEventState(sp->h, ncclProfilerProxyStepSendWait, &a);
  atomic_fetch_add(&sp->n, 1000);
  return NULL;
}

static void test_finalize_race(void) {
  void *ctx = h1_init(0x5EA7, 0);
  void *po = h1_start(ctx, ncclProfileProxyOp, NULL, "Send");
  void *ps = h1_start(ctx, ncclProfileProxyStep, po, NULL);
  ok(ctx && ps, "a communicator with a live ProxyStep");
  spin sp = {ps, 0, 0, 0};
  pthread_t th;
  pthread_create(&th, NULL, stater, &sp);
  const uint64_t b0 = h1_bad_calls();
  atomic_store(&sp.go, 1);
  while (atomic_load(&sp.n) < 2000) {}   /* finalize while it runs */
  ncclProfiler_v5.finalize(ctx);
  atomic_store(&sp.done, 1);
  pthread_join(th, NULL);
  collprof_snapshot s;
  uint64_t counted = 0;
  if (collprof_snapshot_take(&s) == 0) {
    const collprof_path_stat *st = h1_find(&s, "ProxyOp:Send/ProxyStep");
    counted = st ? st->states : 0;
    collprof_snapshot_free(&s);
  }
  const uint64_t bad = h1_bad_calls() - b0;
  ok(bad >= 1000, "states after the finalize are bad calls (%llu)", (unsigned long long)bad);
  ok(counted >= 2000, "states before the finalize are counted (%llu)", (unsigned long long)counted);
  is_u(counted + bad, atomic_load(&sp.n), "every state is counted or a bad call (%llu + %llu)", (unsigned long long)counted,
       (unsigned long long)bad);
}

int main(void) {
  h1_env(NULL);
  test_peek();
  test_chunk_cache();
  test_bounded();
  test_finalize_race();
  return done_testing();
}
