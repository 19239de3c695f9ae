/*
 * test_kc_restop.c — NCCL 2.28's KernelCh "restop", replayed through the
 * plugin's ncclProfiler_v5 table.
 *
 * NCCL 2.28.9's proxy tests a channel's work for its end even when it has
 * not seen its start yet; when the GPU wrote both timestamps between its
 * two reads, it calls recordEventState(22) and stopEvent on the handle its
 * sub-operation kept from an earlier call (an event that stopped long
 * ago), and this call's KernelCh of that channel never starts.  Seen on
 * H200 (4 ranks, Broadcast).  What must hold:
 *   - both calls are bad calls, reported by one line that says what NCCL
 *     did (not as a generic double stop or late state);
 *   - GPU sampling goes on at once: the lost KernelCh is paid back to the
 *     sample in flight (mask_control.h), instead of sampling being held
 *     back for 100 ms (no gate reset);
 *   - the same when the old handle's slot was already handed out again.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "tap.h"
#include "h1_util.h"
#include "mask_control.h"

/* One Broadcast as NCCL 2.28 sends it under the mask it reads first; the
 * proxy side (KernelCh on 2 channels) only when that mask had KernelCh.
 * restop: channel 1's work is "seen ending before it started": state 22 and
 * a stop on *stale (the channel's handle from an earlier call) instead of
 * its own KernelCh.  Returns whether the call was sampled; *last gets
 * channel 1's handle when it started. */
static int one_call(void *ctx, int restop, void **stale, void **last) {
  const int sampled = (h1_mask & ncclProfileKernelCh) != 0;
  void *ga = h1_start(ctx, ncclProfileGroupApi, NULL, NULL);
  void *ca = h1_start(ctx, ncclProfileCollApi, ga, "Broadcast");
  ncclProfiler_v5.stopEvent(ca);
  void *gr = h1_start(ctx, ncclProfileGroup, NULL, NULL);
  void *co = h1_start_coll(ctx, ca, "Broadcast", 2);
  ncclProfiler_v5.stopEvent(co);
  ncclProfiler_v5.stopEvent(gr);
  ncclProfiler_v5.stopEvent(ga);
  if (sampled) {
    void *k0 = h1_start_kch(ctx, co, 1000);
    h1_kch_stop(k0, 2000);
    if (restop && stale && *stale) {
      h1_kch_stop(*stale, 2100);   /* what NCCL 2.28 does: the old handle again */
    } else {
      void *k1 = h1_start_kch(ctx, co, 1010);
      h1_kch_stop(k1, 2010);
      if (last) *last = k1;
    }
  }
  return sampled;
}

/* Drive calls until one is sampled with a restop; then count how many of
 * the next `after` calls are sampled.  Returns that count, -1 if no sampled
 * call came. */
static int restop_then(void *ctx, void *stale, int after) {
  int k;
  for (k = 0; k < 64; k++)
    if (one_call(ctx, 1, &stale, NULL)) break;
  if (k == 64) return -1;
  int n = 0;
  for (int i = 0; i < after; i++) n += one_call(ctx, 0, NULL, NULL);
  return n;
}

int main(void) {
  h1_env(NULL);
  setenv("COLLPROF_GPU_SAMPLE", "4", 1);
  char errf[] = "/tmp/collprof-restop-XXXXXX";
  int efd = mkstemp(errf);
  fflush(stderr);
  int saved = dup(2);
  dup2(efd, 2);

  void *ctx = h1_init(0xBCA5, 0);
  void *stale = NULL;
  int sampled = 0;
  for (int i = 0; i < 40; i++) sampled += one_call(ctx, 0, NULL, &stale);
  const uint64_t b0 = h1_bad_calls(), resets0 = cp_mask_gate_resets();
  /* the old handle's slot is still that event's (stopped) */
  const int next = restop_then(ctx, stale, 12);
  const uint64_t b1 = h1_bad_calls(), resets1 = cp_mask_gate_resets();
  /* again after many events: the old slot was handed out again meanwhile */
  void *old = stale;
  for (int i = 0; i < 400; i++) one_call(ctx, 0, NULL, &stale);
  const int next2 = restop_then(ctx, old, 12);
  const uint64_t b2 = h1_bad_calls(), resets2 = cp_mask_gate_resets();

  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(efd);
  ok(sampled >= 8 && stale != NULL, "one call in 4 sampled before (%d of 40)", sampled);
  is_u(b1 - b0, 2, "the late state 22 and the second stop are two bad calls");
  ok(next >= 2, "sampling goes on at once: %d of the next 12 calls sampled (the gate would hold 100 ms)", next);
  is_u(resets1 - resets0, 0, "no gate reset needed");
  is_u(h1_file_lines(errf, "NCCL stopped a KernelCh again"), 1, "one line says what NCCL did");
  is_u(h1_file_lines(errf, "path GroupApi/CollApi:Broadcast/Coll:Broadcast/KernelCh"), 1, "...and names the path");
  is_u(h1_file_lines(errf, "stopEvent twice"), 0, "not reported as a plain double stop");
  is_u(h1_file_lines(errf, "on a stopped event"), 0, "nor as a plain late state");
  is_u(b2 - b1, 2, "slot reused meanwhile: still two bad calls");
  ok(next2 >= 2, "...and sampling still goes on (%d of 12)", next2);
  is_u(resets2 - resets1, 0, "...without a gate reset");
  is_u(h1_file_lines(errf, "stale or invalid handle"), 0, "...recognised by the handle's path, not called stale");
  unlink(errf);
  ncclProfiler_v5.finalize(ctx);
  return done_testing();
}
