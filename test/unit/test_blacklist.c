/*
 * test_blacklist.c — the parent blacklist of the event pool (src/pool.c):
 * reference counts in the slot, only stopped parents listed, LRU order,
 * eviction at the capacity with one warning and a counter, blacklisted
 * slots kept from reuse; and through
 * the plugin, the reason it exists: a KernelCh that starts after its Coll
 * stopped still adds its GPU span to the Coll's path.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "tap.h"
#include "h1_util.h"
#include "pool.h"

/* stderr into a file while fn runs; returns the number of lines holding needle. */
static int count_stderr(void (*fn)(void *), void *arg, const char *needle) {
  char path[] = "/tmp/collprof-h1-err-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  fn(arg);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  lseek(fd, 0, SEEK_SET);
  FILE *f = fdopen(fd, "r");
  char line[512];
  int n = 0;
  while (f && fgets(line, sizeof line, f)) if (strstr(line, needle)) n++;
  if (f) fclose(f);
  unlink(path);
  return n;
}

typedef struct { cp_pool *p; cp_slot *s[8]; uint32_t i[8]; } ctx_t;

static void evict_many(void *a) {
  ctx_t *c = a;
  /* capacity 2: 7 parents that stop while named: 5 evicted (warning once) */
  cp_pool *p = cp_pool_create(9, 16, 2);
  uint32_t idx[8];
  cp_slot *s[8];
  for (int k = 0; k < 7; k++) {
    s[k] = cp_pool_alloc(p, &idx[k]);
    cp_pool_ref(p, s[k], idx[k]);
    cp_pool_release(p, s[k], idx[k]);
  }
  c->p = p;
}

static void test_direct(void) {
  cp_pool *p = cp_pool_create(5, 4, 2);
  uint32_t i0, i1, i2, i3;
  cp_slot *p0 = cp_pool_alloc(p, &i0), *p1 = cp_pool_alloc(p, &i1), *p2 = cp_pool_alloc(p, &i2);
  cp_pool_ref(p, p0, i0);
  cp_pool_ref(p, p0, i0);
  is_u(p0->refcnt, 2, "two children: count 2 in the slot");
  is_u(p->bl_size, 0, "a live parent only counts: not listed");
  cp_pool_release(p, p0, i0);          /* stops while named */
  is_u(p->bl_size, 1, "a parent that stops while named is listed");
  cp_pool_ref(p, p1, i1);
  cp_pool_release(p, p1, i1);
  is_u(p->bl_size, 2, "second stopped parent listed");
  is_u(p->bl_head, i0, "LRU head is the parent listed first");
  is_u(p->bl_tail, i1, "the one that stopped last is the tail");
  cp_pool_ref(p, p0, i0);   /* named again after its stop: most recent */
  is_u(p->bl_head, i1, "naming p0 again moves it to the tail");
  is_u(p->bl_tail, i0, "p0 is now the most recent");
  cp_pool_ref(p, p2, i2);
  is_u(p->evictions, 0, "a third parent, live: no eviction");
  cp_pool_release(p, p2, i2);   /* over capacity 2: evict LRU = p1 */
  is_u(p->evictions, 1, "it stops named, over capacity: one eviction counted");
  is_u(p1->refcnt, 0, "the least recently named parent (p1) was evicted");
  is_u(p0->refcnt, 3, "p0 kept its count");
  is_u(p->bl_size, 2, "size back at the capacity");
  cp_pool_unref(p, p1, i1);
  is_u(p1->refcnt, 0, "a late unref of an evicted parent is harmless");
  /* stopped parents with live children are not handed out again */
  cp_slot *n1 = cp_pool_alloc(p, &i3);
  ok(n1 && i3 == 3, "next slot round robin is 3");
  uint32_t j;
  cp_slot *n2 = cp_pool_alloc(p, &j);
  ok(n2 && j == i1, "then the free slot 1, skipping blacklisted 0 and 2 (got %u)", j);
  uint32_t cap = p->capacity;
  cp_slot *n3 = cp_pool_alloc(p, &j);
  ok(n3 && p->capacity == cap + 4 && j == cap, "with only blacklisted and live slots left the pool grows");
  for (int k = 0; k < 3; k++) cp_pool_unref(p, p0, i0);
  is_u(p0->refcnt, 0, "count back to 0 after the last child");
  cp_pool_unref(p, p2, i2);
  is_u(p->bl_size, 0, "blacklist empty");
  cp_slot *n4 = cp_pool_alloc(p, &j);
  ok(n4 && (j == i0 || j == i2 || j >= 4), "released parents are available again");
  cp_pool_destroy(p);
}

/* Live parents never take blacklist room: however many run with children,
 * none is evicted, and the last child of one leaves the pool's counts as
 * they were. */
static void test_live_parents(void) {
  cp_pool *p = cp_pool_create(6, 16, 1);
  uint32_t idx[6];
  cp_slot *s[6];
  for (int k = 0; k < 6; k++) {
    s[k] = cp_pool_alloc(p, &idx[k]);
    cp_pool_ref(p, s[k], idx[k]);
    cp_pool_ref(p, s[k], idx[k]);
  }
  const uint32_t busy = p->busy;
  is_u(busy, 6, "six live parents: six busy slots");
  is_u(p->bl_size, 0, "none listed");
  is_u(p->evictions, 0, "capacity 1, six live parents named: no eviction");
  for (int k = 0; k < 6; k++) { cp_pool_unref(p, s[k], idx[k]); cp_pool_unref(p, s[k], idx[k]); }
  is_u(s[5]->refcnt, 0, "last child gone: count 0");
  is_u(p->busy, busy, "still busy (live), nothing listed");
  is_u(p->bl_size, 0, "blacklist still empty");
  for (int k = 0; k < 6; k++) cp_pool_release(p, s[k], idx[k]);
  is_u(p->busy, 0, "stopped without children: all free");
  /* a hold (KernelCh to come) is taken live and listed at the stop */
  uint32_t h;
  cp_slot *c = cp_pool_alloc(p, &h);
  cp_pool_hold(p, c, h, 4);
  ok(c->refcnt == 4 && c->hold == 4 && p->bl_size == 0, "hold on a live Coll: counted, not listed");
  cp_pool_release(p, c, h);
  ok(p->bl_size == 1 && p->bl_tail == h && p->busy == 1, "listed when it stops, still busy");
  for (int k = 0; k < 4; k++) ok(cp_pool_hold_take(c), "KernelCh %d takes a hold over", k);
  for (int k = 0; k < 4; k++) cp_pool_unref(p, c, h);
  ok(p->bl_size == 0 && p->busy == 0 && c->refcnt == 0, "the last KernelCh frees it");
  cp_pool_destroy(p);
}

static void test_evictions(void) {
  ctx_t c = {0};
  int lines = count_stderr(evict_many, &c, "blacklist");
  is_u(c.p->evictions, 5, "capacity 2, 7 parents: 5 evictions counted");
  is_u(c.p->bl_size, 2, "blacklist never exceeds its capacity");
  is_u(lines, 1, "one warning line for all evictions");
  cp_pool_destroy(c.p);
}

static void test_late_child(void) {
  void *ctx = h1_init(4444, 0);
  void *api = h1_start(ctx, ncclProfileCollApi, NULL, "AllGather");
  ncclProfiler_v5.stopEvent(api);
  void *coll = h1_start(ctx, ncclProfileColl, api, "AllGather");
  ncclProfiler_v5.stopEvent(coll);       /* Coll stops before its channels start */
  /* channel 0 starts after the Coll stopped; while it is live the Coll's
   * slot is blacklisted, so traffic (pool of 8) cannot take it */
  void *k0 = h1_start_kch(ctx, coll, 1000000);
  for (int i = 0; i < 20; i++) ncclProfiler_v5.stopEvent(h1_start(ctx, ncclProfileGroup, NULL, NULL));
  void *k1 = h1_start_kch(ctx, coll, 1000200);
  h1_kch_stop(k0, 1000500);
  for (int i = 0; i < 20; i++) ncclProfiler_v5.stopEvent(h1_start(ctx, ncclProfileGroup, NULL, NULL));
  h1_kch_stop(k1, 1000900);
  collprof_snapshot s;
  collprof_snapshot_take(&s);
  const collprof_path_stat *pc = h1_find(&s, "CollApi:AllGather/Coll:AllGather");
  const collprof_path_stat *pk = h1_find(&s, "CollApi:AllGather/Coll:AllGather/KernelCh");
  ok(pc && pc->gpu_samples == 1 && pc->gpu_ns == 900,
     "late KernelCh children give the stopped Coll one GPU span of 900 ns (latest stop - earliest start): %llu/%llu",
     pc ? (unsigned long long)pc->gpu_ns : 0ULL, pc ? (unsigned long long)pc->gpu_samples : 0ULL);
  ok(pk && pk->gpu_samples == 2 && pk->gpu_ns == 500 + 700, "KernelCh path sums its own GPU durations");
  ok(s.ncomms >= 1, "communicator listed");
  int found = 0;
  for (size_t i = 0; i < s.ncomms; i++)
    if (s.comms[i].comm_id == 4444) found = s.comms[i].gpu_offset_valid;
  ok(found, "GPU clock offset estimated from KernelCh starts");
  collprof_snapshot_free(&s);
  /* the span was pending in the slot; reuse accounts it, once */
  for (int i = 0; i < 40; i++) ncclProfiler_v5.stopEvent(h1_start(ctx, ncclProfileGroup, NULL, NULL));
  collprof_snapshot_take(&s);
  pc = h1_find(&s, "CollApi:AllGather/Coll:AllGather");
  ok(pc && pc->gpu_samples == 1 && pc->gpu_ns == 900, "after the slot was reused the span is still counted once");
  collprof_snapshot_free(&s);
}

int main(void) {
  h1_env("8");
  test_evictions();
  test_direct();
  test_live_parents();
  test_late_child();
  return done_testing();
}
