/*
 * test_fast_path.c — the callbacks' common-case paths (event_start.c:
 * start_fast; start_counted.c; the fast entries of stop and state)
 * against the general ones.
 *
 * The same event sequence is run once on one communicator (after the first
 * event every callback takes the fast path) and once interleaved on two
 * communicators, event by event (the thread's cached context and pool
 * change at every callback, so every callback takes the general path).  The
 * per-path numbers of the second run must be exactly twice those of the
 * first.  Then the bad calls the fast entries classify by one key compare
 * (pool.h, cp_slot_key) must still be told apart: a double stop, a state on
 * a stopped event, a stale handle after reuse, and a forged handle naming a
 * slot never handed out; each counted once, each with its own stderr line.
 * Last, on the pool directly: a slot's generation never has a zero low byte
 * (handles carry it; 0 marks a slot never used), across many reuses.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "tap.h"
#include "h1_util.h"
#include "handle.h"
#include "pool.h"

/* One API call: GroupApi > CollApi, Group > Coll > 2 KernelCh, ProxyOp > ProxyStep. */
static void one_call(void *ctx, int which, void **hv) {
  (void)which;
  void *ga = h1_start(ctx, ncclProfileGroupApi, NULL, NULL);
  void *ca = h1_start(ctx, ncclProfileCollApi, ga, "AllReduce");
  ncclProfilerEventStateArgs_v5_t a;
  memset(&a, 0, sizeof a);
  ncclProfiler_v5.recordEventState(ga, ncclProfilerGroupStartApiStop, &a);
  ncclProfiler_v5.stopEvent(ca);
  void *gr = h1_start(ctx, ncclProfileGroup, NULL, NULL);
  void *co = h1_start(ctx, ncclProfileColl, gr, "AllReduce");
  void *k0 = h1_start_kch(ctx, co, 1000);
  void *k1 = h1_start_kch(ctx, co, 1100);
  h1_kch_stop(k0, 5000);
  h1_kch_stop(k1, 5200);
  void *po = h1_start(ctx, ncclProfileProxyOp, co, "Send");
  void *ps = h1_start(ctx, ncclProfileProxyStep, po, NULL);
  a.transSize = 4096;
  ncclProfiler_v5.recordEventState(ps, ncclProfilerProxyStepSendGPUWait, &a);
  ncclProfiler_v5.recordEventState(ps, ncclProfilerProxyStepSendWait, &a);
  ncclProfiler_v5.stopEvent(ps);
  ncclProfiler_v5.stopEvent(po);
  ncclProfiler_v5.stopEvent(co);
  ncclProfiler_v5.stopEvent(gr);
  ncclProfiler_v5.stopEvent(ga);
  if (hv) *hv = co;
}

/* Interleaved on two communicators: every callback switches context. */
static void one_call_pair(void *ca_, void *cb_) {
  void *ctx[2] = {ca_, cb_};
  void *ga[2], *ca[2], *gr[2], *co[2], *k0[2], *po[2], *ps[2];
  ncclProfilerEventStateArgs_v5_t a;
  memset(&a, 0, sizeof a);
  for (int i = 0; i < 2; i++) ga[i] = h1_start(ctx[i], ncclProfileGroupApi, NULL, NULL);
  for (int i = 0; i < 2; i++) ca[i] = h1_start(ctx[i], ncclProfileCollApi, ga[i], "AllReduce");
  for (int i = 0; i < 2; i++) ncclProfiler_v5.recordEventState(ga[i], ncclProfilerGroupStartApiStop, &a);
  for (int i = 0; i < 2; i++) ncclProfiler_v5.stopEvent(ca[i]);
  for (int i = 0; i < 2; i++) gr[i] = h1_start(ctx[i], ncclProfileGroup, NULL, NULL);
  for (int i = 0; i < 2; i++) co[i] = h1_start(ctx[i], ncclProfileColl, gr[i], "AllReduce");
  for (int i = 0; i < 2; i++) k0[i] = h1_start_kch(ctx[i], co[i], 1000);
  void *k1[2];
  for (int i = 0; i < 2; i++) k1[i] = h1_start_kch(ctx[i], co[i], 1100);
  for (int i = 0; i < 2; i++) h1_kch_stop(k0[i], 5000);
  for (int i = 0; i < 2; i++) h1_kch_stop(k1[i], 5200);
  for (int i = 0; i < 2; i++) po[i] = h1_start(ctx[i], ncclProfileProxyOp, co[i], "Send");
  for (int i = 0; i < 2; i++) ps[i] = h1_start(ctx[i], ncclProfileProxyStep, po[i], NULL);
  a.transSize = 4096;
  for (int i = 0; i < 2; i++) ncclProfiler_v5.recordEventState(ps[i], ncclProfilerProxyStepSendGPUWait, &a);
  for (int i = 0; i < 2; i++) ncclProfiler_v5.recordEventState(ps[i], ncclProfilerProxyStepSendWait, &a);
  for (int i = 0; i < 2; i++) ncclProfiler_v5.stopEvent(ps[i]);
  for (int i = 0; i < 2; i++) ncclProfiler_v5.stopEvent(po[i]);
  for (int i = 0; i < 2; i++) ncclProfiler_v5.stopEvent(co[i]);
  for (int i = 0; i < 2; i++) ncclProfiler_v5.stopEvent(gr[i]);
  for (int i = 0; i < 2; i++) ncclProfiler_v5.stopEvent(ga[i]);
}

enum { NPATH = 64 };
typedef struct counts { char path[NPATH][160]; uint64_t calls[NPATH], bytes[NPATH], states[NPATH], gpu[NPATH]; size_t n; } counts;

static void take(counts *c) {
  collprof_snapshot s;
  memset(c, 0, sizeof *c);
  if (collprof_snapshot_take(&s) != 0) return;
  for (size_t i = 0; i < s.npaths && c->n < NPATH; i++) {
    snprintf(c->path[c->n], sizeof c->path[0], "%s", s.paths[i].path);
    c->calls[c->n] = s.paths[i].calls;
    c->bytes[c->n] = s.paths[i].bytes;
    c->states[c->n] = s.paths[i].states;
    c->gpu[c->n] = s.paths[i].gpu_samples;
    c->n++;
  }
  collprof_snapshot_free(&s);
}

static size_t find(const counts *c, const char *p) {
  for (size_t i = 0; i < c->n; i++)
    if (strcmp(c->path[i], p) == 0) return i;
  return SIZE_MAX;
}

static void test_same_numbers(void *ca, void *cb) {
  enum { N = 40 };
  counts c0, c1, c2;
  one_call(ca, 0, NULL);   /* paths exist, the context is cached */
  take(&c0);
  for (int i = 0; i < N; i++) one_call(ca, 0, NULL);
  take(&c1);
  for (int i = 0; i < N; i++) one_call_pair(ca, cb);
  take(&c2);
  int compared = 0, bad = 0;
  for (size_t i = 0; i < c2.n; i++) {
    size_t j0 = find(&c0, c2.path[i]), j1 = find(&c1, c2.path[i]);
    uint64_t b0 = j0 == SIZE_MAX ? 0 : c0.calls[j0], b1 = j1 == SIZE_MAX ? 0 : c1.calls[j1];
    uint64_t fast = b1 - b0, general = c2.calls[i] - b1;
    if (fast == 0 && general == 0) continue;
    compared++;
    uint64_t fb = (j1 == SIZE_MAX ? 0 : c1.bytes[j1]) - (j0 == SIZE_MAX ? 0 : c0.bytes[j0]);
    uint64_t gb = c2.bytes[i] - (j1 == SIZE_MAX ? 0 : c1.bytes[j1]);
    uint64_t fs = (j1 == SIZE_MAX ? 0 : c1.states[j1]) - (j0 == SIZE_MAX ? 0 : c0.states[j0]);
    uint64_t gs = c2.states[i] - (j1 == SIZE_MAX ? 0 : c1.states[j1]);
    uint64_t fg = (j1 == SIZE_MAX ? 0 : c1.gpu[j1]) - (j0 == SIZE_MAX ? 0 : c0.gpu[j0]);
    uint64_t gg = c2.gpu[i] - (j1 == SIZE_MAX ? 0 : c1.gpu[j1]);
    if (general != 2 * fast || gb != 2 * fb || gs != 2 * fs || gg != 2 * fg) {
      bad++;
      diag("%s: fast calls %llu bytes %llu states %llu gpu %llu; general %llu %llu %llu %llu", c2.path[i],
           (unsigned long long)fast, (unsigned long long)fb, (unsigned long long)fs, (unsigned long long)fg,
           (unsigned long long)general, (unsigned long long)gb, (unsigned long long)gs, (unsigned long long)gg);
    }
  }
  is_u(compared, 7, "every path of the call was compared (GroupApi, CollApi, Group, Coll, KernelCh, ProxyOp, ProxyStep)");
  ok(bad == 0, "general path (two communicators interleaved) gives exactly twice the fast path's "
               "calls, bytes, states and GPU samples per path");
}

static void test_bad_calls(void *ca) {
  char errf[] = "/tmp/collprof-fastpath-XXXXXX";
  int efd = mkstemp(errf);
  fflush(stderr);
  int saved = dup(2);
  dup2(efd, 2);

  uint64_t b0 = h1_bad_calls();
  void *co = NULL;
  one_call(ca, 0, &co);             /* co: a Coll handle, stopped */
  ncclProfiler_v5.stopEvent(co);   /* stopped twice */
  uint64_t b1 = h1_bad_calls();
  ncclProfilerEventStateArgs_v5_t a;
  memset(&a, 0, sizeof a);
  ncclProfiler_v5.recordEventState(co, ncclProfilerProxyStepSendWait, &a);   /* state on a stopped event */
  uint64_t b2 = h1_bad_calls();
  for (int i = 0; i < 400; i++) one_call(ca, 0, NULL);   /* co's slot handed out again */
  ncclProfiler_v5.stopEvent(co);   /* stale */
  uint64_t b3 = h1_bad_calls();
  const cp_handle_fields f = cp_handle_fields_of((uint64_t)(uintptr_t)co);
  void *forged = (void *)(uintptr_t)cp_handle_make(f.path, f.comm, 1000, 1);   /* slot never used */
  ncclProfiler_v5.stopEvent(forged);
  ncclProfiler_v5.recordEventState(forged, ncclProfilerProxyStepSendWait, &a);
  uint64_t b4 = h1_bad_calls();

  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(efd);
  is_u(b1 - b0, 1, "a double stop is one bad call");
  is_u(b2 - b1, 1, "a state on a stopped event is one bad call");
  is_u(b3 - b2, 1, "a stop with a handle whose slot was reused is one bad call");
  is_u(b4 - b3, 2, "a forged handle naming a never-used slot: stop and state are bad calls");
  is_u(h1_file_lines(errf, "stopEvent twice on one event"), 1, "double stop: its own warning");
  is_u(h1_file_lines(errf, "recordEventState on a stopped event"), 1, "state on a stopped event: its own warning");
  {
    /* the line names the event: its handle and call path (a Coll here) */
    char want[160];
    snprintf(want, sizeof want, "stopEvent twice on one event (handle %p, path ", co);
    is_u(h1_file_lines(errf, want), 1, "double stop: the line gives the event's handle");
    is_u(h1_file_lines(errf, "path Group/Coll:AllReduce, thread "), 2, "double stop and late state: the lines give the call path");
  }
  is_u(h1_file_lines(errf, "stopEvent with a stale or invalid handle"), 1, "stale stop: its own warning");
  /* the forged state shares the stale kind with the stop: one line per kind */
  unlink(errf);
}

static void test_generation(void) {
  cp_pool *p = cp_pool_create(9, 1, 4);
  int zero_low = 0, key_ok = 1, gens = 0;
  uint32_t last = 0;
  for (int i = 0; i < 1000; i++) {
    uint32_t idx;
    cp_slot *s = cp_pool_alloc(p, &idx);
    if (!s) { key_ok = 0; break; }
    s->path = 5;
    if ((s->gen & 0xFFu) == 0) zero_low++;
    if (s->gen <= last) key_ok = 0;
    last = s->gen;
    gens++;
    const uint64_t h = cp_handle_make(5, 9, idx, s->gen);
    if (cp_slot_key(s) != cp_handle_key(h)) key_ok = 0;
    cp_pool_release(p, s, idx);
    if (cp_slot_key(s) != (cp_handle_key(h) & ~CP_KEY_LIVE)) key_ok = 0;
  }
  is_u(gens, 1000, "1000 hand-outs of one slot");
  ok(last > 1000, "the generation passed several multiples of 256 (%u)", last);
  is_u(zero_low, 0, "no generation with a zero low byte (a handle's 0 means never used)");
  ok(key_ok, "a live slot's key equals its handle's; stopped, it equals the key without the live bit");
  cp_pool_destroy(p);
}

int main(void) {
  h1_env(NULL);
  void *ca = h1_init(0xFA57, 0);
  void *cb = h1_init(0xFA58, 1);
  ok(ca && cb, "two communicators");
  test_same_numbers(ca, cb);
  test_bad_calls(ca);
  test_generation();
  ncclProfiler_v5.finalize(ca);
  ncclProfiler_v5.finalize(cb);
  return done_testing();
}
