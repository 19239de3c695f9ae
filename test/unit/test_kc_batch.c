/*
 * test_kc_batch.c — KernelCh recorded on a proxy thread under the
 * application thread's Coll.  Until the pool has seen a KernelCh from
 * another thread its sampled Coll holds its channels (src/kc_batch.h):
 * their stops reach the Coll's pool as one post.  From then on (parent_link.c,
 * kc_span) a sampled Coll holds nothing and the proxy thread gathers its
 * span itself: no post at all, whatever order the channels come in.
 * Either way the Coll ends with exactly one GPU span of latest stop -
 * earliest start, nothing of it held, and each KernelCh with its own.
 * A Coll whose channels did not all stop gets the span of those that did,
 * when the table pushes it out or when the proxy thread ends; a channel
 * that starts after its Coll's slot was handed out again still counts.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include "tap.h"
#include "h1_util.h"
#include "pool.h"
#include "registry.h"
#include "handle.h"

static cp_pool *app_pool(void *ctx) {
  cp_comm *c = cp_registry_from_ctx((uint64_t)(uintptr_t)ctx);
  return c ? c->lanes[0] : NULL;
}

/* A whole API call on this (the application) thread: GroupApi, CollApi,
 * one Coll of nch channels, all stopped; returns the Coll's handle. */
static void *api_call(void *ctx, const char *func, int nch) {
  void *g = h1_start(ctx, ncclProfileGroupApi, NULL, NULL);
  void *a = h1_start(ctx, ncclProfileCollApi, g, func);
  void *coll = h1_start_coll(ctx, a, func, nch);
  ncclProfiler_v5.stopEvent(coll);
  ncclProfiler_v5.stopEvent(a);
  ncclProfiler_v5.stopEvent(g);
  return coll;
}

/* What the proxy thread does: a script of KernelCh starts and stops.
 * op[i] > 0: start KernelCh number op[i]-1 under parent[op[i]-1] at s[..];
 * op[i] < 0: its GPU stop (e[..]) and stop. */
typedef struct script {
  void *ctx;
  void *parent[8];
  uint64_t s[8], e[8];
  int op[16], nop;
} script;

static void *proxy_thread(void *arg) {
  script *sc = arg;
  void *h[8] = {NULL};
  for (int i = 0; i < sc->nop; i++) {
    const int k = (sc->op[i] > 0 ? sc->op[i] : -sc->op[i]) - 1;
    if (sc->op[i] > 0) h[k] = h1_start_kch(sc->ctx, sc->parent[k], sc->s[k]);
    else h1_kch_stop(h[k], sc->e[k]);
  }
  return NULL;
}

/* Runs the script on a thread of its own; returns the posts the
 * application thread's pool received meanwhile. */
static uint32_t run_proxy(script *sc, cp_pool *p) {
  const uint32_t t0 = atomic_load(&p->in_tail);
  pthread_t th;
  pthread_create(&th, NULL, proxy_thread, sc);
  pthread_join(th, NULL);
  return atomic_load(&p->in_tail) - t0;
}

/* One application-thread event: its pool's holder applies the posts. */
static void app_event(void *ctx) { ncclProfiler_v5.stopEvent(h1_start(ctx, ncclProfileGroup, NULL, NULL)); }

/* Case 6's proxy thread: a Coll's first channel starts, the application
 * thread records meanwhile (two barriers), then its second starts and both
 * stop. */
typedef struct reuse_arg {
  void *ctx, *parent;
  pthread_barrier_t *b;
} reuse_arg;
static void *reuse_proxy(void *arg) {
  reuse_arg *a = arg;
  void *k0 = h1_start_kch(a->ctx, a->parent, 10000);
  pthread_barrier_wait(a->b);
  pthread_barrier_wait(a->b);
  void *k1 = h1_start_kch(a->ctx, a->parent, 10100);
  h1_kch_stop(k0, 10500);
  h1_kch_stop(k1, 10700);
  return NULL;
}

static uint64_t span_of(const script *sc, int from, int n) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int k = from; k < from + n; k++) {
    if (sc->s[k] < lo) lo = sc->s[k];
    if (sc->e[k] > hi) hi = sc->e[k];
  }
  return hi - lo;
}

static const collprof_path_stat *path(collprof_snapshot *snap, const char *p) {
  collprof_snapshot_free(snap);
  collprof_snapshot_take(snap);
  return h1_find(snap, p);
}

#define COLL(f) "GroupApi/CollApi:" f "/Coll:" f
int main(void) {
  h1_env(NULL);
  setenv("COLLPROF_GPU_SAMPLE", "1", 1);
  void *ctx = h1_init(7101, 0);
  cp_pool *p = app_pool(ctx);
  ok(p != NULL && (h1_mask & ncclProfileKernelCh), "a communicator with KernelCh on every call");
  collprof_snapshot snap;
  memset(&snap, 0, sizeof snap);

  /* 1. NCCL's order: 4 channels start, then stop one by one */
  script a = {.ctx = ctx, .s = {1000, 1010, 1005, 1020}, .e = {1500, 1700, 1600, 1550},
              .op = {1, 2, 3, 4, -1, -2, -3, -4}, .nop = 8};
  void *c1 = api_call(ctx, "AllReduce", 4);
  for (int k = 0; k < 4; k++) a.parent[k] = c1;
  is_u(p->bl_size, 1, "the sampled Coll is held for its channels");
  is_u(run_proxy(&a, p), 1, "4 KernelCh, all started before the first stopped: one post");
  app_event(ctx);
  is_u(p->bl_size, 0, "applied: every reference back, the Coll's slot is free");
  const collprof_path_stat *pc = path(&snap, COLL("AllReduce"));
  is_u(pc ? pc->gpu_samples : 0, 1, "the Coll has one GPU sample");
  is_u(pc ? pc->gpu_ns : 0, span_of(&a, 0, 4), "of latest channel stop - earliest start");
  const collprof_path_stat *pk = path(&snap, COLL("AllReduce") "/KernelCh");
  is_u(pk ? pk->gpu_samples : 0, 4, "each KernelCh has its own sample");
  is_u(pk ? pk->calls : 0, 4, "... and its call");

  /* 2. two Colls' channels interleaved: A1 A2 B1 B2 start, then all stop */
  script b = {.ctx = ctx, .s = {2000, 2100, 3000, 3050}, .e = {2900, 2500, 3400, 3900},
              .op = {1, 2, 3, 4, -1, -2, -3, -4}, .nop = 8};
  void *ca = api_call(ctx, "Broadcast", 2), *cb = api_call(ctx, "Reduce", 2);
  b.parent[0] = b.parent[1] = ca;
  b.parent[2] = b.parent[3] = cb;
  is_u(run_proxy(&b, p), 0, "interleaved, the pool having seen a remote KernelCh: nothing posted");
  app_event(ctx);
  is_u(p->bl_size, 0, "both Colls released (they held nothing)");
  pc = path(&snap, COLL("Broadcast"));
  ok(pc && pc->gpu_samples == 1 && pc->gpu_ns == span_of(&b, 0, 2), "Coll A: one span over its 2 channels");
  pc = path(&snap, COLL("Reduce"));
  ok(pc && pc->gpu_samples == 1 && pc->gpu_ns == span_of(&b, 2, 2), "Coll B: one span over its 2 channels");

  /* 3. each channel started and stopped before the next starts */
  script c = {.ctx = ctx, .s = {4000, 4200, 4100}, .e = {4300, 4800, 4400}, .op = {1, -1, 2, -2, 3, -3}, .nop = 6};
  void *cc = api_call(ctx, "AllGather", 3);
  for (int k = 0; k < 3; k++) c.parent[k] = cc;
  is_u(run_proxy(&c, p), 0, "start, stop, start, stop...: nothing posted");
  app_event(ctx);
  pc = path(&snap, COLL("AllGather"));
  ok(pc && pc->gpu_samples == 1 && pc->gpu_ns == span_of(&c, 0, 3), "still one span over the 3 channels");
  is_u(p->bl_size, 0, "and released");

  /* 4. a KernelCh that never stops: its Coll's span waits for it (until
   * four parents are open at once on that thread, or the thread ends),
   * and holds nothing meanwhile; the proxy thread's end accounts it with
   * the channel that stopped */
  script d = {.ctx = ctx, .s = {5000, 5100, 6000}, .e = {5400, 0, 6300}, .op = {1, 2, -1, 3, -3}, .nop = 5};
  void *cd = api_call(ctx, "ReduceScatter", 2), *ce = api_call(ctx, "AllToAll", 1);
  d.parent[0] = d.parent[1] = cd;
  d.parent[2] = ce;
  is_u(run_proxy(&d, p), 0, "nothing posted");
  app_event(ctx);
  is_u(p->bl_size, 0, "the Coll whose channel never stopped is not held");
  pc = path(&snap, COLL("ReduceScatter"));
  ok(pc && pc->gpu_samples == 1 && pc->gpu_ns == 400,
     "its span, waiting for the channel that never stopped, accounted as the proxy thread ended: the one that did");
  pc = path(&snap, COLL("AllToAll"));
  ok(pc && pc->gpu_samples == 1 && pc->gpu_ns == 300, "the next Coll its own");

  /* 5. more Colls waiting for channels than the table holds (4): the
   * oldest is pushed out with the span of the channels it has */
  script f = {.ctx = ctx, .s = {9000, 9100, 9200, 9300, 9400}, .e = {9050, 9150, 9250, 9350, 9450},
              .op = {1, 2, 3, 4, -1, -2, -3, -4, 5, -5}, .nop = 10};
  const char *fn[5] = {"F1", "F2", "F3", "F4", "F5"};
  for (int k = 0; k < 5; k++) f.parent[k] = api_call(ctx, fn[k], 2);   /* one of their 2 channels comes */
  is_u(run_proxy(&f, p), 0, "five half-done Colls: nothing posted");
  pc = path(&snap, COLL("F1"));
  ok(pc && pc->gpu_samples == 1 && pc->gpu_ns == 50, "the oldest, pushed out by the fifth, with its one channel's span");
  pc = path(&snap, COLL("F2"));
  ok(pc && pc->gpu_samples == 1 && pc->gpu_ns == 50,
     "the others, still waiting for their second channel, accounted at the thread's end");
  pc = path(&snap, COLL("ReduceScatter"));
  ok(pc && pc->gpu_samples == 1, "the thread that took the ended one's block found its table empty");
  is_u(p->bl_size, 0, "none of them held");

  /* 6. the Coll's slot handed out again between its first and its second
   * channel's start (its thread went on recording a pool's worth of
   * events): the second still joins the gathering the first opened, by
   * the handle, without reading the slot */
  void *cr = api_call(ctx, "R1", 2);
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, 2);
  reuse_arg ra = {ctx, cr, &bar};
  pthread_t th;
  pthread_create(&th, NULL, reuse_proxy, &ra);
  pthread_barrier_wait(&bar);
  for (int i = 0; i < 1100; i++) app_event(ctx);
  cp_handle_fields hf;
  const cp_slot *sl = cp_handle_decode((uint64_t)(uintptr_t)cr, &hf) ? cp_pool_slot(p, cp_slot_local(hf.slot)) : NULL;
  ok(sl && (sl->gen & 0xFFu) != hf.gen, "the Coll's slot handed out again after its first channel started");
  pthread_barrier_wait(&bar);
  pthread_join(th, NULL);
  pthread_barrier_destroy(&bar);
  pc = path(&snap, COLL("R1"));
  ok(pc && pc->gpu_samples == 1 && pc->gpu_ns == 700, "its second channel joined all the same: one span over both");
  is_u(h1_bad_calls(), 0, "no bad calls");
  collprof_snapshot_free(&snap);
  return done_testing();
}
