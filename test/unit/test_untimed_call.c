/*
 * test_untimed_call.c — what an untimed call records (src/call_modes.h, "Host
 * sampling"): a call that runs with KernelCh on but is not due for host
 * timing counts its GroupApi, CollApi, KernelLaunch and Group (counted
 * handles: generation 0), and records its Coll alone, whose KernelCh need
 * its slot for the call's GPU span.
 *
 * With COLLPROF_HOST_SAMPLE=0 no call is timed once every path has had
 * its first timed calls (warm-up).  Then KernelCh is turned on by hand in
 * the mask NCCL reads for one call in 2, each such call's Coll gets two
 * channels: the checks are that the KernelCh calls' other events are
 * counted, not recorded (their handles, the communicator's recorded
 * events), that every Coll of them is recorded and gets its GPU span (and
 * a P2p is recorded), that counts stay exact, and that the calls with
 * KernelCh off are counted whole, Coll included.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "h1_util.h"

#define KC ((int)ncclProfileKernelCh)

static int counted(const void *h) { return h && ((uintptr_t)h & 0xFFu) == 0; }

typedef struct handles { void *ga, *ca, *kl, *gr, *co; } handles;

/* An NVLink-shaped call (h1_nvlink_call) keeping its handles; with
 * nch > 0 its Coll's nch KernelCh run after it stopped, as NCCL's proxy
 * thread sends them, channel i from base + 100 i to base + 100 i + 50. */
static handles call(void *ctx, int nch, uint64_t base) {
  handles h;
  h.ga = h1_start_n(ctx, ncclProfileGroupApi, NULL, NULL, 0);
  ncclProfiler_v5.recordEventState(h.ga, ncclProfilerGroupStartApiStop, NULL);
  h.ca = h1_start_n(ctx, ncclProfileCollApi, h.ga, "AllReduce", 256);
  ncclProfiler_v5.stopEvent(h.ca);
  ncclProfiler_v5.recordEventState(h.ga, ncclProfilerGroupEndApiStart, NULL);
  h.kl = h1_start_n(ctx, ncclProfileKernelLaunch, h.ga, NULL, 0);
  h1_stop(h.kl);
  h.gr = h1_start_n(ctx, ncclProfileGroup, NULL, NULL, 0);
  h.co = h1_start_coll(ctx, h.ca, "AllReduce", nch > 0 ? nch : 1);
  ncclProfiler_v5.stopEvent(h.co);
  h1_stop(h.gr);
  ncclProfiler_v5.stopEvent(h.ga);
  for (int i = 0; i < nch; i++) {
    void *k = h1_start_kch(ctx, h.co, base + 100u * (uint64_t)i);
    h1_kch_stop(k, base + 100u * (uint64_t)i + 50);
  }
  return h;
}

enum { N = 200, NCH = 2 };

typedef struct view { uint64_t ga, co, co_gpu, co_gpu_ns, kc, events, kl, gr; } view;

static view look(void) {
  view v = {0, 0, 0, 0, 0, 0, 0, 0};
  collprof_snapshot s;
  if (collprof_snapshot_take(&s) != 0) return v;
  const collprof_path_stat *p = h1_find(&s, "GroupApi");
  v.ga = p ? p->calls : 0;
  p = h1_find(&s, "GroupApi/CollApi:AllReduce/Coll:AllReduce");
  if (p) { v.co = p->calls; v.co_gpu = p->gpu_samples; v.co_gpu_ns = p->gpu_ns; }
  p = h1_find(&s, "GroupApi/CollApi:AllReduce/Coll:AllReduce/KernelCh");
  v.kc = p ? p->calls : 0;
  p = h1_find(&s, "GroupApi/KernelLaunch");
  v.kl = p ? p->calls : 0;
  p = h1_find(&s, "Group");
  v.gr = p ? p->calls : 0;
  for (size_t i = 0; i < s.ncomms; i++) v.events += s.comms[i].events;
  collprof_snapshot_free(&s);
  return v;
}

int main(void) {
  setenv("COLLPROF_HOST_SAMPLE", "0", 1);
  setenv("NCCL_PROFILE_EVENT_MASK", "4031", 1);   /* no KernelCh unless turned on below */
  setenv("COLLPROF_GPU_SAMPLE", "0", 1);          /* the mask is set by hand */
  setenv("COLLPROF_LAUNCH_SAMPLE", "0", 1);
  h1_env(NULL);
  void *a = h1_init(0x0E71, 0);
  if (!ok(a != NULL, "a communicator")) return done_testing();

  /* warm-up: every path's first calls timed (a path counted without a
   * time has the next calls timed; the KernelCh here start on the calling
   * thread, so they are timed only in such a call) */
  for (int i = 0; i < 32; i++) {
    h1_mask = (i & 1) ? h1_mask | KC : h1_mask & ~KC;
    call(a, (i & 1) ? NCH : 0, 1000u * (uint64_t)(i + 1));
  }
  const view v0 = look();
  int kc_counted = 0, kc_coll_recorded = 0, plain_counted = 0;
  for (int i = 0; i < N; i++) {
    const int kc = i & 1;
    if (kc) h1_mask |= KC;
    else h1_mask &= ~KC;
    const handles h = call(a, kc ? NCH : 0, 1000000u * (uint64_t)(i + 1));
    if (kc) {
      kc_counted += counted(h.ga) && counted(h.ca) && !h.kl && !h.gr;
      kc_coll_recorded += h.co && !counted(h.co);
    } else {
      plain_counted += counted(h.ga) && counted(h.ca) && !h.kl && !h.gr && counted(h.co);
    }
  }
  h1_mask &= ~KC;
  const view v1 = look();
  is_u((uint64_t)kc_counted, N / 2,
       "KernelCh calls not timed: GroupApi, CollApi counted; KernelLaunch, Group counted with no handle (no stop)");
  is_u((uint64_t)kc_coll_recorded, N / 2, "...and their Coll recorded");
  is_u((uint64_t)plain_counted, N / 2, "calls with KernelCh off: counted whole");
  is_u(v1.events - v0.events, (uint64_t)(N / 2) * (1 + NCH),
       "recorded events: each KernelCh call's Coll and its channels, nothing else");
  is_u(v1.ga - v0.ga, N, "GroupApi: every call counted");
  is_u(v1.co - v0.co, N, "Coll: every call counted");
  is_u(v1.kl - v0.kl, N, "KernelLaunch: every call counted (no handle, so no stop)");
  is_u(v1.gr - v0.gr, N, "Group: every call counted (no handle, so no stop)");
  is_u(h1_bad_calls(), 0, "no bad call");
  is_u(v1.kc - v0.kc, (uint64_t)(N / 2) * NCH, "KernelCh: every channel counted");
  is_u(v1.co_gpu - v0.co_gpu, N / 2, "every KernelCh call's Coll has its GPU span");
  is_u(v1.co_gpu_ns - v0.co_gpu_ns, (uint64_t)(N / 2) * (100u * (NCH - 1) + 50),
       "...latest channel stop minus earliest channel start");

  /* A send of an untimed call: its P2pApi counted, its P2p recorded. */
  h1_mask |= KC;
  void *ga = h1_start_n(a, ncclProfileGroupApi, NULL, NULL, 0);
  void *pa = h1_start_n(a, ncclProfileP2pApi, ga, "Send", 64);
  ncclProfiler_v5.stopEvent(pa);
  void *p2 = h1_start_n(a, ncclProfileP2p, pa, "Send", 64);
  ncclProfiler_v5.stopEvent(p2);
  ncclProfiler_v5.stopEvent(ga);
  h1_mask &= ~KC;
  ok(counted(ga) && counted(pa) && p2 && !counted(p2), "an untimed call's P2pApi counted, its P2p recorded");
  is_u(h1_bad_calls(), 0, "no bad calls");
  return done_testing();
}
