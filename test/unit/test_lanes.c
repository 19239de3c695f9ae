/*
 * test_lanes.c — one event pool per communicator and calling thread
 * (registry.h, lanes): each thread's events land in its own lane, named in
 * the handle; a child on one thread links to its parent in another
 * thread's lane and gives it back its reference at stop; more threads than
 * lanes share lanes without losing an event; finalize releases every lane,
 * and a thread that comes after finalize creates none.
 */
#include <pthread.h>
#include "h1_util.h"
#include "handle.h"
#include "pool.h"
#include "registry.h"
#include "tap.h"

static uint32_t lane_of_handle(void *h) { return cp_slot_lane((uint32_t)((uintptr_t)h >> 8) & 0xFFFFFFu); }

typedef struct job {
  void *ctx, *parent;
  int n;
  uint32_t lane;                    /* lane of the first handle this thread got */
  void *first;
} job;

/* A ProxyOp under the given parent (another thread's Coll), started and stopped here. */
static void *child_thread(void *arg) {
  job *j = arg;
  void *po = h1_start(j->ctx, ncclProfileProxyOp, j->parent, "Send");
  j->first = po;
  j->lane = lane_of_handle(po);
  ncclProfiler_v5.stopEvent(po);
  return NULL;
}

/* n Group events, started and stopped here; the first one stays open
 * until every such thread has started one (a thread's block, and so its
 * lane, passes to a later thread once it exits: tls.c). */
static pthread_barrier_t all_started;
static int use_barrier;
static void *churn_thread(void *arg) {
  job *j = arg;
  void *first = h1_start(j->ctx, ncclProfileGroup, NULL, NULL);
  j->first = first;
  j->lane = lane_of_handle(first);
  if (use_barrier) pthread_barrier_wait(&all_started);
  if (first) ncclProfiler_v5.stopEvent(first);
  for (int i = 1; i < j->n; i++) ncclProfiler_v5.stopEvent(h1_start(j->ctx, ncclProfileGroup, NULL, NULL));
  return NULL;
}

static uint64_t comm_events(uint32_t idx) {
  collprof_snapshot s;
  if (collprof_snapshot_take(&s) != 0) return 0;
  const uint64_t e = idx >= 1 && idx <= s.ncomms ? s.comms[idx - 1].events : 0;
  collprof_snapshot_free(&s);
  return e;
}

int main(void) {
  h1_env(NULL);
  setenv("COLLPROF_GPU_SAMPLE", "0", 1);   /* no KernelCh holds: every slot comes back */
  void *ctx = h1_init(0x1a7e, 0);
  const cp_comm *c = cp_registry_from_ctx((uint64_t)(uintptr_t)ctx);
  ok(c != NULL, "communicator registered");
  if (!c) return done_testing();

  /* A call on this thread, a ProxyOp under its Coll on another. */
  void *ga = h1_start(ctx, ncclProfileGroupApi, NULL, NULL);
  void *ca = h1_start(ctx, ncclProfileCollApi, ga, "AllReduce");
  void *co = h1_start_coll(ctx, ca, "AllReduce", 1);
  is_u(lane_of_handle(co), 0, "the first thread's events are in lane 0");
  job j = {ctx, co, 0, 99, NULL};
  pthread_t th;
  pthread_create(&th, NULL, child_thread, &j);
  pthread_join(th, NULL);
  is_u(j.lane, 1, "another thread's events are in a lane of its own (1)");
  ok(cp_registry_lane(c->index, 1) != NULL, "lane 1 was created for it");
  cp_pool *l0 = cp_registry_lane(c->index, 0), *l1 = cp_registry_lane(c->index, 1);
  ok(l0 && l1 && l0 != l1 && l1->lane == 1 && l1->comm_index == c->index, "lane 1 is its own pool of this communicator");
  ncclProfiler_v5.stopEvent(co);
  ncclProfiler_v5.stopEvent(ca);
  ncclProfiler_v5.stopEvent(ga);
  collprof_snapshot s;
  ok(collprof_snapshot_take(&s) == 0, "snapshot");
  const collprof_path_stat *p = h1_find(&s, "GroupApi/CollApi:AllReduce/Coll:AllReduce/ProxyOp:Send");
  ok(p && p->calls == 1, "the ProxyOp's path runs through its Coll in the other lane");
  collprof_snapshot_free(&s);
  ok(l0 && l0->busy == 0 && l0->bl_size == 0, "the Coll got its reference back: lane 0 holds nothing");
  ok(l1 && l1->busy == 0, "lane 1 holds nothing");
  is_u(h1_bad_calls(), 0, "no bad calls");

  /* As NCCL does it: the ProxyOp starts after its Coll stopped.  It takes
   * no reference then (nothing to give a stopped parent), so the proxy
   * thread posts nothing to lane 0's owner, and the path is still the
   * Coll's. */
  ga = h1_start(ctx, ncclProfileGroupApi, NULL, NULL);
  ca = h1_start(ctx, ncclProfileCollApi, ga, "AllReduce");
  ncclProfiler_v5.stopEvent(ca);
  co = h1_start_coll(ctx, ca, "AllReduce", 1);
  ncclProfiler_v5.stopEvent(co);
  ncclProfiler_v5.stopEvent(ga);
  const uint32_t posts_before = l0 ? atomic_load(&l0->in_tail) : 0;
  j = (job){ctx, co, 0, 99, NULL};
  pthread_create(&th, NULL, child_thread, &j);
  pthread_join(th, NULL);
  ok(l0 && atomic_load(&l0->in_tail) == posts_before, "a ProxyOp under a stopped Coll posts nothing to its owner");
  ok(collprof_snapshot_take(&s) == 0, "snapshot");
  p = h1_find(&s, "GroupApi/CollApi:AllReduce/Coll:AllReduce/ProxyOp:Send");
  ok(p && p->calls == 2, "and its path still runs through the Coll (2 calls)");
  collprof_snapshot_free(&s);
  ok(l0 && l0->busy == 0 && l0->bl_size == 0, "lane 0 holds nothing");
  is_u(h1_bad_calls(), 0, "no bad calls");

  /* More threads than lanes: every event counted, every lane in use. */
  const uint64_t before = comm_events(c->index);
  enum { NT = 20, PER = 100 };
  job js[NT];
  pthread_t ts[NT];
  pthread_barrier_init(&all_started, NULL, NT);
  use_barrier = 1;
  for (int i = 0; i < NT; i++) {
    js[i] = (job){ctx, NULL, PER, 99, NULL};
    pthread_create(&ts[i], NULL, churn_thread, &js[i]);
  }
  for (int i = 0; i < NT; i++) pthread_join(ts[i], NULL);
  use_barrier = 0;
  is_u(comm_events(c->index) - before, NT * PER, "20 threads x 100 events, all counted");
  int lanes = 0, handles = 0;
  for (uint32_t i = 0; i < CP_LANES; i++) lanes += cp_registry_lane(c->index, i) != NULL;
  for (int i = 0; i < NT; i++) handles += js[i].first != NULL && js[i].lane < CP_LANES;
  is_u(lanes, CP_LANES, "every lane in use");
  is_u(handles, NT, "every thread got handles (shared lanes included)");
  is_u(h1_bad_calls(), 0, "still no bad calls");

  /* Finalize releases every lane; a late stop in lane 3 is a bad call. */
  ncclProfiler_v5.finalize(ctx);
  int released = 0;
  for (uint32_t i = 0; i < CP_LANES; i++) {
    cp_pool *l = cp_registry_lane(c->index, i);
    released += l && l->released && l->finalized;
  }
  is_u(released, CP_LANES, "finalize released and closed every lane");
  void *late = NULL;
  for (int i = 0; i < NT && !late; i++)
    if (js[i].lane == 3) late = js[i].first;
  ok(late != NULL, "a handle of lane 3");
  ncclProfiler_v5.stopEvent(late);
  is_u(h1_bad_calls(), 1, "a stop after finalize in lane 3 is one bad call");

  /* A thread that first comes after finalize creates no lane. */
  void *ctx2 = h1_init(0x1a7f, 0);
  const cp_comm *c2 = cp_registry_from_ctx((uint64_t)(uintptr_t)ctx2);
  ncclProfiler_v5.finalize(ctx2);
  job j2 = {ctx2, NULL, 1, 99, NULL};
  pthread_create(&th, NULL, churn_thread, &j2);
  pthread_join(th, NULL);
  ok(j2.first == NULL, "an event after finalize gets no handle");
  /* lanes 0 and 1 are made at registration (registry.c); no other */
  ok(c2 && cp_registry_lane(c2->index, 2) == NULL && c2->lane_owner[1] == 0,
     "and no lane was created or claimed for its thread");
  return done_testing();
}
