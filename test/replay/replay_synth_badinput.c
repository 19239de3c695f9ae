/*
 * replay_synth_badinput.c — `--synthetic badinput`: every misuse a plugin
 * living inside someone else's job must survive without crashing, blocking
 * or losing good data: NULL descriptor, NULL eHandle, NULL/unknown/foreign
 * handles on stop and state, double stops (also after the slot was handed
 * out again), states after stop, unknown types and states, NULL strings,
 * startEvent with a NULL context (what NCCL does after init failed) or a
 * foreign one, callbacks on a finalized communicator, double and foreign
 * finalize.  Good API calls run between the bad calls; only those are in
 * the --expect counts.  --count N: repetitions of the whole sequence
 * (default 3).
 */
#include <string.h>
#include "replay_synth.h"

static void *const foreign_values[] = {
  (void *)(uintptr_t)0xdeadbeefull, (void *)(uintptr_t)0x55f6860f5eb0ull,
  (void *)(uintptr_t)1, (void *)(uintptr_t)~0ull,
  (void *)(uintptr_t)0xC000ffff00000100ull,     /* collprof's handle tag, nonsense fields */
  (void *)(uintptr_t)0xC0000001ffffff07ull,
  (void *)(uintptr_t)0xD000000000000001ull,     /* context-like value */
  (void *)(uintptr_t)0xB000000100000001ull,     /* proxy_defer.h's tag, deferral off */
};
#define NFOREIGN (sizeof foreign_values / sizeof foreign_values[0])

/* One good API call with two KernelCh children (counted in --expect). */
static void good_call(sy_tab *t, void *ctx, const char *func, const char *ca, const char *co) {
  sy_apicall a;
  ncclProfilerEventDescr_v5_t d;
  sy_apicall_run(t, &a, ctx, 0, func, ca, co, 7, 4096, 2, 0, 0);
  for (int ch = 0; ch < 2; ch++) {
    sy_ev kc;
    uint64_t g0 = sy_gpu_now();
    sy_d_kernelch(&d, 0, ch, g0);
    sy_start(t, &kc, &a.call, ctx, &a.coll, NULL, &d, "KernelCh", 0);
    sy_state(&kc, ncclProfilerKernelChStop, RP_ARG_PTIMER, g0 + 100);
    sy_stop(t, &kc);
  }
  sy_stop(t, &a.coll);
}

static void bad_round(sy_tab *t, sy_tab *junk, void *ctx_a, void *ctx_b) {
  ncclProfilerEventDescr_v5_t d;
  ncclProfilerEventStateArgs_v5_t args;
  memset(&args, 0, sizeof args);
  void *h = NULL;
  good_call(t, ctx_a, "AllReduce", "CollApi:AllReduce", "Coll:AllReduce");

  /* NULL descriptor, NULL eHandle */
  rp_host_start(ctx_a, &h, NULL);
  if (h) rp_host_stop(h);
  sy_d_coll(&d, 0, "AllReduce", 1, 8, 1);
  rp_host_start(ctx_a, NULL, &d);
  /* NULL and foreign handles on stop and state */
  rp_host_stop(NULL);
  rp_host_state(NULL, ncclProfilerKernelChStop, &args);
  rp_host_state(NULL, ncclProfilerProxyStepSendWait, NULL);
  for (size_t i = 0; i < NFOREIGN; i++) {
    rp_host_stop(foreign_values[i]);
    rp_host_state(foreign_values[i], ncclProfilerProxyStepSendWait, &args);
  }
  /* double stop, state after stop, stale stop after the slot was reused */
  sy_apicall x;
  sy_apicall_run(t, &x, ctx_a, 0, "Reduce", "CollApi:Reduce", "Coll:Reduce", 1, 64, 1, 0, 1);
  if (x.coll.h) {
    rp_host_stop(x.coll.h);
    rp_host_state(x.coll.h, ncclProfilerProxyOpInProgress_v4, NULL);
  }
  sy_apicall y;
  sy_apicall_run(t, &y, ctx_a, 0, "ReduceScatter", "CollApi:ReduceScatter",
                 "Coll:ReduceScatter", 1, 64, 1, 0, 0);
  sy_ev *xs[] = { &x.ga, &x.ca, &x.kl, &x.g, &x.coll };
  for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++)   /* every handle of x, again */
    if (xs[i]->h) rp_host_stop(xs[i]->h);
  sy_stop(t, &y.coll);                          /* y's own stop must still count once */
  /* a child naming a handle that was stopped twice: must not crash */
  if (x.coll.h) {
    sy_d_kernelch(&d, 0, 0, sy_gpu_now());
    d.parentObj = x.coll.h;
    h = NULL;
    rp_host_start(ctx_a, &h, &d);
    if (h) { rp_host_state(h, ncclProfilerKernelChStop, NULL); rp_host_stop(h); }
  }
  /* unknown types and states, NULL strings */
  const uint64_t odd_types[] = { 0, 3, 4096, 1ull << 40 };
  for (size_t i = 0; i < sizeof odd_types / sizeof odd_types[0]; i++) {
    sy_d_simple(&d, odd_types[i], 0);
    h = NULL;
    rp_host_start(ctx_a, &h, &d);
    if (h) { rp_host_state(h, 99, &args); rp_host_stop(h); }
  }
  sy_d_coll(&d, 0, NULL, 2, 8, 1);
  d.coll.datatype = NULL; d.coll.algo = NULL; d.coll.proto = NULL;
  h = NULL;
  rp_host_start(ctx_a, &h, &d);
  if (h) { rp_host_state(h, 12345, NULL); rp_host_stop(h); }
  /* NULL context (NCCL after a failed init) and a foreign context */
  sy_apicall z;
  sy_call_begin(&z.call);
  sy_d_groupapi(&d, 0, 0);
  sy_start(junk, &z.ga, &z.call, NULL, NULL, NULL, &d, "GroupApi", 0);
  sy_d_coll(&d, 0, "AllReduce", 3, 8, 1);
  sy_start(junk, &z.coll, &z.call, NULL, &z.ga, NULL, &d, "Coll:AllReduce", 0);
  sy_stop(junk, &z.coll);
  sy_stop(junk, &z.ga);
  for (size_t i = 0; i < NFOREIGN; i++) {
    sy_d_coll(&d, 0, "AllReduce", 4, 8, 1);
    h = NULL;
    rp_host_start(foreign_values[i], &h, &d);
    if (h) rp_host_stop(h);
  }
  good_call(t, ctx_b, "AllGather", "CollApi:AllGather", "Coll:AllGather");
}

int rp_synth_badinput(const rp_synth_opts *o) {
  long rounds = o->count > 0 ? o->count : 3;
  sy_tab t = {0}, junk = {0};
  void *ctx_b = NULL;
  rp_host_init(&ctx_b, 0x5eed0005ull, "bad-b", 1, 2, 0);
  for (long r = 0; r < rounds; r++) {
    void *ctx_a = NULL;
    rp_host_init(&ctx_a, 0x5eed0004ull + (uint64_t)r * 16, "bad-a", 1, 2, 0);
    bad_round(&t, &junk, ctx_a, ctx_b);
    /* callbacks on a finalized communicator (ctx_b keeps the plugin loaded) */
    sy_apicall late;
    sy_apicall_run(&junk, &late, ctx_a, 0, "Broadcast", "CollApi:Broadcast", "Coll:Broadcast",
                   9, 64, 1, 0, 0);
    rp_host_fini(ctx_a, 1);
    if (late.coll.h) {
      rp_host_state(late.coll.h, ncclProfilerProxyOpInProgress_v4, NULL);
      rp_host_stop(late.coll.h);
    }
    ncclProfilerEventDescr_v5_t d;
    sy_d_coll(&d, 0, "Broadcast", 10, 64, 1);
    void *h = NULL;
    rp_host_start(ctx_a, &h, &d);
    if (h) rp_host_stop(h);
    rp_host_fini(ctx_a, 0);          /* double finalize */
    rp_host_fini(NULL, 0);
    rp_host_fini((void *)(uintptr_t)0x55f6860f5eb0ull, 0);
    good_call(&t, ctx_b, "AllGather", "CollApi:AllGather", "Coll:AllGather");
  }
  rp_host_fini(ctx_b, 1);
  /* Paths the bad calls share with good ones (GroupApi, Group, ...) have no
   * one right count: leave them out of --expect. */
  char a[1024], b[1024];
  for (int i = 0; i < t.n; i++)
    for (int j = 0; j < junk.n; j++) {
      sy_tab_render(&t, i, a, sizeof a);
      sy_tab_render(&junk, j, b, sizeof b);
      if (!strcmp(a, b)) t.count[i] = t.states[i] = 0;
    }
  sy_tab_flush(&t);
  return 1;
}
