/*
 * test_kernelch_hold.c — a Coll/P2p of a call that ran with KernelCh on
 * holds its pool slot for its nChannels KernelCh children (pool.h,
 * cp_pool_hold), so children that start after the Coll stopped AND after
 * the pool went round more than once (the host runs far ahead of the GPU)
 * still give the Coll its one GPU span.  Also: an unsampled Coll is not
 * held, extra children do not underflow the count, eviction and finalize
 * end a hold (the span of the channels that came is still accounted), v4.
 * Pool chunks of 4 slots; spans are computed here from the pTimers given.
 */
#include <stdint.h>
#include <string.h>
#include "tap.h"
#include "h1_util.h"
#include "pool.h"
#include "registry.h"

#define KC ((int)ncclProfileKernelCh)

static cp_pool *pool_of(void *ctx) {
  cp_comm *c = cp_registry_from_ctx((uint64_t)(uintptr_t)ctx);
  return c ? c->lanes[0] : NULL;
}

/* More than a pool's worth of unrelated events, started and stopped. */
static void churn(void *ctx, int n) {
  for (int i = 0; i < n; i++) ncclProfiler_v5.stopEvent(h1_start(ctx, ncclProfileGroup, NULL, NULL));
}

/* A whole API call: GroupApi, CollApi, one Coll of nch channels, all
 * stopped; *coll gets the Coll's handle.  kc_off: the call runs with
 * KernelCh off in NCCL's mask (unsampled). */
static void api_call(void *ctx, const char *func, int nch, int kc_off, void **coll) {
  int saved = h1_mask;
  if (kc_off) h1_mask &= ~KC;
  void *g = h1_start(ctx, ncclProfileGroupApi, NULL, NULL);
  h1_mask = saved;
  void *a = h1_start(ctx, ncclProfileCollApi, g, func);
  *coll = h1_start_coll(ctx, a, func, nch);
  ncclProfiler_v5.stopEvent(*coll);
  ncclProfiler_v5.stopEvent(a);
  ncclProfiler_v5.stopEvent(g);
}

/* n channels: start i at s[i], stop at e[i]; returns latest stop - earliest start. */
static uint64_t channels(void *ctx, void *coll, int n, const uint64_t *s, const uint64_t *e, int churn_between) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < n; i++) {
    void *k = h1_start_kch(ctx, coll, s[i]);
    if (churn_between) churn(ctx, 9);
    h1_kch_stop(k, e[i]);
    if (s[i] < lo) lo = s[i];
    if (e[i] > hi) hi = e[i];
  }
  return hi - lo;
}

static const collprof_path_stat *find(collprof_snapshot *s, const char *path) {
  collprof_snapshot_free(s);
  collprof_snapshot_take(s);
  return h1_find(s, path);
}

int main(void) {
  h1_env("4");
  setenv("COLLPROF_GPU_SAMPLE", "1", 1);
  void *ctx = h1_init(7001, 0);
  cp_pool *p = pool_of(ctx);
  ok(p && p->chunk_size == 4, "pool chunks of 4 slots");
  ok((h1_mask & KC) != 0, "KernelCh on in the mask (COLLPROF_GPU_SAMPLE=1)");
  collprof_snapshot snap;
  memset(&snap, 0, sizeof snap);
  collprof_snapshot_take(&snap);

  /* 1. sampled Coll, 3 channels, all starting after 3 pool sizes of churn */
  void *coll;
  api_call(ctx, "AllReduce", 3, 0, &coll);
  is_u(p->bl_size, 1, "a stopped sampled Coll stays listed (held for its channels)");
  churn(ctx, 12);
  const uint64_t s1[3] = {5000300, 5000100, 5000200}, e1[3] = {5000900, 5001700, 5001100};
  uint64_t span1 = channels(ctx, coll, 3, s1, e1, 1);
  is_u(p->bl_size, 0, "after its 3 channels stopped the Coll's slot is released");
  churn(ctx, 12);   /* the slot is reused: its span is accounted then, once */
  const collprof_path_stat *pc = find(&snap, "GroupApi/CollApi:AllReduce/Coll:AllReduce");
  ok(pc != NULL, "Coll path present");
  is_u(pc ? pc->gpu_samples : 0, 1, "late channels after pool churn: exactly one GPU sample on the Coll path");
  is_u(pc ? pc->gpu_ns : 0, span1, "its span is latest channel stop - earliest channel start");
  const collprof_path_stat *pk = find(&snap, "GroupApi/CollApi:AllReduce/Coll:AllReduce/KernelCh");
  is_u(pk ? pk->gpu_samples : 0, 3, "each channel has its own GPU sample");

  /* 2. unsampled Coll (KernelCh off at its GroupApi): not held */
  api_call(ctx, "Broadcast", 2, 1, &coll);
  is_u(p->bl_size, 0, "an unsampled Coll is not held after its stop");
  churn(ctx, 12);
  const uint64_t s2[2] = {7000000, 7000050}, e2[2] = {7000500, 7000600};
  channels(ctx, coll, 2, s2, e2, 0);
  pc = find(&snap, "GroupApi/CollApi:Broadcast/Coll:Broadcast");
  is_u(pc ? pc->gpu_samples : 9, 0, "its late children find the slot recycled: no span (not held)");
  is_u(p->bl_size, 0, "nothing left listed");

  /* 3. KernelCh of an unsampled call while its Coll is live: ordinary references */
  {
    int saved = h1_mask;
    h1_mask &= ~KC;
    void *g = h1_start(ctx, ncclProfileGroupApi, NULL, NULL);
    h1_mask = saved;
    void *a = h1_start(ctx, ncclProfileCollApi, g, "Reduce");
    void *c = h1_start_coll(ctx, a, "Reduce", 1);
    const uint64_t s3[2] = {8000000, 8000010}, e3[2] = {8000400, 8000300};
    void *k0 = h1_start_kch(ctx, c, s3[0]);
    void *k1 = h1_start_kch(ctx, c, s3[1]);
    ncclProfiler_v5.stopEvent(c);
    ncclProfiler_v5.stopEvent(a);
    ncclProfiler_v5.stopEvent(g);
    churn(ctx, 12);
    h1_kch_stop(k0, e3[0]);
    h1_kch_stop(k1, e3[1]);
    is_u(p->bl_size, 0, "unsampled Coll with live channels: released after they stop");
    churn(ctx, 12);
    pc = find(&snap, "GroupApi/CollApi:Reduce/Coll:Reduce");
    is_u(pc ? pc->gpu_samples : 0, 1, "its channels, started while it was live, still give one span");
    is_u(pc ? pc->gpu_ns : 0, e3[0] - s3[0], "of latest stop - earliest start");
  }

  /* 4. more channels than nChannels: the extra ones take ordinary references */
  api_call(ctx, "AllGather", 1, 0, &coll);
  {
    const uint64_t s4[3] = {9000000, 9000020, 9000040}, e4[3] = {9000100, 9000500, 9000200};
    uint64_t span4 = channels(ctx, coll, 3, s4, e4, 0);
    is_u(p->bl_size, 0, "three channels for nChannels=1: no underflow, released after the last");
    churn(ctx, 12);
    pc = find(&snap, "GroupApi/CollApi:AllGather/Coll:AllGather");
    is_u(pc ? pc->gpu_samples : 0, 1, "one span");
    is_u(pc ? pc->gpu_ns : 0, span4, "over all three channels");
  }
  uint64_t bad0 = h1_bad_calls();
  is_u(bad0, 0, "no bad calls so far");

  /* 5. fewer channels than nChannels: finalize ends the hold, the span of
   *    those that came is accounted */
  void *ctx2 = h1_init(7002, 0);
  cp_pool *p2 = pool_of(ctx2);
  api_call(ctx2, "ReduceScatter", 4, 0, &coll);
  const uint64_t s5[2] = {10000000, 10000100}, e5[2] = {10000700, 10000400};
  uint64_t span5 = channels(ctx2, coll, 2, s5, e5, 1);
  churn(ctx2, 12);
  is_u(p2 ? p2->bl_size : 0, 1, "2 of 4 channels came: the Coll is still held through churn");
  ncclProfiler_v5.finalize(ctx2);
  pc = find(&snap, "GroupApi/CollApi:ReduceScatter/Coll:ReduceScatter");
  is_u(pc ? pc->gpu_samples : 0, 1, "finalize accounts the pending span once");
  is_u(pc ? pc->gpu_ns : 0, span5, "over the channels that came");

  /* 6. v4: the mask at the Coll's start decides; Coll under its Group */
  {
    void *c4 = NULL;
    ncclProfiler_v4.init(&c4, &h1_mask, "v4", 7003, 1, 2, 0, NULL);
    cp_pool *p4 = pool_of(c4);
    ncclProfilerEventDescr_v4_t d4;
    memset(&d4, 0, sizeof d4);
    d4.type = ncclProfileGroup;
    void *g4 = NULL, *co4 = NULL;
    ncclProfiler_v4.startEvent(c4, &g4, &d4);
    memset(&d4, 0, sizeof d4);
    d4.type = ncclProfileColl;
    d4.parentObj = g4;
    d4.coll.func = "AllToAll";
    d4.coll.count = 4;
    d4.coll.datatype = "ncclFloat32";
    d4.coll.nChannels = 2;
    ncclProfiler_v4.startEvent(c4, &co4, &d4);
    ncclProfiler_v4.stopEvent(co4);
    ncclProfiler_v4.stopEvent(g4);
    for (int i = 0; i < 12; i++) {
      void *h = NULL;
      memset(&d4, 0, sizeof d4);
      d4.type = ncclProfileGroup;
      ncclProfiler_v4.startEvent(c4, &h, &d4);
      ncclProfiler_v4.stopEvent(h);
    }
    is_u(p4 ? p4->bl_size : 0, 1, "v4: sampled Coll held through churn");
    const uint64_t s6[2] = {11000000, 11000300}, e6[2] = {11000900, 11001000};
    for (int i = 0; i < 2; i++) {
      void *k = NULL;
      memset(&d4, 0, sizeof d4);
      d4.type = ncclProfileKernelCh;
      d4.parentObj = co4;
      d4.kernelCh.pTimer = s6[i];
      ncclProfiler_v4.startEvent(c4, &k, &d4);
      ncclProfilerEventStateArgs_v4_t a;
      a.pTimer = e6[i];
      ncclProfiler_v4.recordEventState(k, ncclProfilerKernelChStop, &a);
      ncclProfiler_v4.stopEvent(k);
    }
    is_u(p4 ? p4->bl_size : 0, 0, "v4: released after its 2 channels");
    pc = find(&snap, "Group/Coll:AllToAll");
    is_u(pc ? pc->gpu_samples : 0, 1, "v4: one span");
    is_u(pc ? pc->gpu_ns : 0, (e6[1] > e6[0] ? e6[1] : e6[0]) - (s6[0] < s6[1] ? s6[0] : s6[1]), "v4: latest stop - earliest start");
  }

  /* 7. the pool API: eviction ends a hold; a held slot is not reused */
  {
    cp_pool *q = cp_pool_create(77, 4, 2);
    uint32_t i[4];
    cp_slot *s[4];
    for (int k = 0; k < 3; k++) {
      s[k] = cp_pool_alloc(q, &i[k]);
      cp_pool_hold(q, s[k], i[k], 3);
      cp_pool_release(q, s[k], i[k]);
    }
    is_u(q->evictions, 1, "cap 2, three held parents: one eviction");
    ok(s[0]->refcnt == 0 && s[0]->hold == 0, "the evicted parent's hold ended");
    ok(s[1]->refcnt == 3 && s[1]->hold == 3, "the others keep theirs");
    is_u(q->busy, 2, "the evicted, stopped slot is free again");
    ok(cp_pool_hold_take(s[1]) && s[1]->hold == 2 && s[1]->refcnt == 3, "a channel takes over one held reference");
    ok(!cp_pool_hold_take(s[0]), "nothing to take from an evicted parent");
    cp_pool_unref(q, s[1], i[1]);
    cp_pool_unref(q, s[1], i[1]);
    cp_pool_unref(q, s[1], i[1]);
    ok(s[1]->refcnt == 0 && q->bl_size == 1 && q->busy == 1, "count 0: released");
    cp_pool_destroy(q);
    q = cp_pool_create(78, 4, 8);
    q->scratch = 1;
    s[0] = cp_pool_alloc(q, &i[0]);
    cp_pool_hold(q, s[0], i[0], 2);
    ok(s[0]->refcnt == 0 && q->bl_size == 0, "the self-cost scratch pool never holds");
    cp_pool_destroy(q);
  }
  collprof_snapshot_free(&snap);
  return done_testing();
}
