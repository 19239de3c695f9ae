/*
 * test_registry.c — communicator contexts (src/registry.c, src/handle.h):
 * values we hand out decode back, anything else (another process's context,
 * a pointer, garbage, a wrong salt) is rejected without being dereferenced
 * (the values tried point at an inaccessible page: a dereference would
 * crash the test); concurrent init; PXN routing of foreign contexts and the
 * robustness of every callback against foreign or NULL values.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "tap.h"
#include "h1_util.h"
#include "handle.h"
#include "registry.h"

static void *init_many(void *arg) {
  uint64_t base = (uint64_t)(uintptr_t)arg;
  for (int i = 0; i < 8; i++) h1_init(base + (uint64_t)i, i);
  return NULL;
}

int main(void) {
  h1_env(NULL);
  void *ctx = h1_init(777, 0);
  uint64_t v = (uint64_t)(uintptr_t)ctx;
  ok(ctx != NULL && (v >> 60) == 0xD, "context value carries tag 0xD");
  cp_comm *c = cp_registry_from_ctx(v);
  ok(c && c->comm_id == 777 && c->ctx_value == v, "our context decodes to its registry entry");
  ok(c && cp_registry_get(c->index) == c && c->index >= 1, "registry index 1.. and lookup by index");

  /* an inaccessible page: any dereference would fault */
  char *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ok(page != MAP_FAILED, "inaccessible page mapped");
  ok(cp_registry_from_ctx((uint64_t)(uintptr_t)page) == NULL, "a pointer (another plugin's context) is not ours");
  ok(cp_registry_from_ctx(0) == NULL, "NULL is not ours");
  uint32_t salt = cp_registry_salt();
  ok(cp_registry_from_ctx(cp_ctx_make(salt + 1, c->index)) == NULL,
     "same index with another salt (another collprof process, PXN) is rejected");
  ok(cp_registry_from_ctx(cp_ctx_make(salt, cp_registry_count() + 1)) == NULL, "an index not handed out is rejected");
  ok(cp_registry_from_ctx(cp_ctx_make(salt, 0)) == NULL, "index 0 is rejected");
  ok(cp_registry_from_ctx(v | 0x1000) == NULL, "a value with reserved bits set is rejected");
  ok(cp_registry_from_ctx(cp_handle_make(0, c->index, 0, 1)) == NULL, "an event handle is not a context");

  /* concurrent init */
  uint32_t before = cp_registry_count();
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, init_many, (void *)(uintptr_t)(10000 + 100 * i));
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  is_u(cp_registry_count(), before + 32, "32 concurrent inits give 32 entries");
  int distinct = 1;
  for (uint32_t i = before + 1; i <= before + 32; i++) {
    const cp_comm *e = cp_registry_get(i);
    if (!e || e->index != i || cp_registry_from_ctx(e->ctx_value) != e) distinct = 0;
  }
  ok(distinct, "each has its own index and context value");

  /* callbacks with foreign values: never crash, counted, NCCL gets success */
  uint64_t bad0 = h1_bad_calls();
  ncclProfilerEventDescr_v5_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileColl;
  d.coll.func = "AllReduce";
  void *h = (void *)1;
  is_u(ncclProfiler_v5.startEvent(page, &h, &d), 0, "start with a foreign context returns ncclSuccess");
  ok(h == NULL, "and no handle");
  h = (void *)1;
  ncclProfiler_v5.startEvent(NULL, &h, &d);
  ok(h == NULL, "NULL context (failed init): no handle");
  ncclProfiler_v5.startEvent(ctx, NULL, &d);
  ncclProfiler_v5.startEvent(ctx, &h, NULL);
  is_u(ncclProfiler_v5.stopEvent(page), 0, "stop with a foreign pointer returns ncclSuccess");
  ncclProfiler_v5.stopEvent((void *)(uintptr_t)cp_handle_make(0, 4000, 5, 1));
  ncclProfiler_v5.recordEventState(page, ncclProfilerProxyStepSendWait, NULL);
  ncclProfiler_v5.finalize(page);
  is_u(h1_bad_calls(), bad0 + 8, "8 bad calls counted");

  /* PXN: ProxyOp of another process, foreign context and parent */
  ncclProfilerEventDescr_v5_t op;
  memset(&op, 0, sizeof op);
  op.type = ncclProfileProxyOp;
  op.parentObj = page + 64;
  op.proxyOp.pid = getpid() + 1;
  op.proxyOp.isSend = 1;
  void *hop = NULL;
  ncclProfiler_v5.startEvent(page, &hop, &op);
  ok(hop != NULL, "PXN ProxyOp recorded although context and parent are foreign");
  ncclProfilerEventDescr_v5_t st;
  memset(&st, 0, sizeof st);
  st.type = ncclProfileProxyStep;
  st.parentObj = hop;
  void *hst = NULL;
  ncclProfiler_v5.startEvent(page, &hst, &st);
  ok(hst != NULL, "its ProxyStep (foreign context, our PXN parent) follows it to the detach pool");
  ncclProfiler_v5.stopEvent(hst);
  ncclProfiler_v5.stopEvent(hop);
  /* our own context but another pid: PXN too */
  op.proxyOp.pid = getpid() + 2;
  op.proxyOp.isSend = 0;
  void *hop2 = NULL;
  ncclProfiler_v5.startEvent(ctx, &hop2, &op);
  ncclProfiler_v5.stopEvent(hop2);
  collprof_snapshot s;
  collprof_snapshot_take(&s);
  const collprof_path_stat *p1 = h1_find(&s, "PXN/ProxyOp:Send");
  const collprof_path_stat *p2 = h1_find(&s, "PXN/ProxyOp:Send/ProxyStep");
  const collprof_path_stat *p3 = h1_find(&s, "PXN/ProxyOp:Recv");
  ok(p1 && p1->calls == 1 && p2 && p2->calls == 1 && p3 && p3->calls == 1,
     "paths PXN/ProxyOp:Send, PXN/ProxyOp:Send/ProxyStep, PXN/ProxyOp:Recv");
  is_u(s.events_pxn, 3, "3 PXN events counted");
  collprof_snapshot_free(&s);

  /* finalize; events after it are refused */
  void *g = h1_start(ctx, ncclProfileGroup, NULL, NULL);
  is_u(ncclProfiler_v5.finalize(ctx), 0, "finalize returns ncclSuccess");
  bad0 = h1_bad_calls();
  ncclProfiler_v5.finalize(ctx);
  ncclProfiler_v5.stopEvent(g);
  ok(h1_start(ctx, ncclProfileGroup, NULL, NULL) == NULL, "no handle after finalize");
  is_u(h1_bad_calls(), bad0 + 3, "double finalize, stop and start after finalize counted");
  ok(cp_registry_from_ctx(v) == c && c->finalized, "entry kept after finalize, marked finalized");
  munmap(page, 4096);
  return done_testing();
}
