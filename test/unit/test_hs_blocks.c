/*
 * test_hs_blocks.c — one host-sampling decision per API call, whichever
 * way its GroupApi start goes (src/start_counted.c: cp_start_group_api
 * decides and counts a counted call from the memo; any other call it
 * hands on to start_fast, marked decided, which must not decide again).
 *
 * With COLLPROF_HOST_SAMPLE=4 every block of 4 API calls has exactly one
 * timed call.  Loops of NVLink-shaped calls (GroupApi with its two
 * states, CollApi, KernelLaunch, Group, Coll) must then time exactly a
 * quarter of their calls: a second decision for the same call would move
 * the block on twice (about half the calls timed, or none of some
 * blocks).  Calls and bytes stay exact, and timed calls keep their
 * durations (a path's total is nonzero).  Then the same with GPU sampling
 * on (KernelCh on one call in 2: such a call is recorded untimed, its
 * decision still one): a quarter timed again, and the untimed recorded
 * calls counted as untimed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "h1_util.h"

typedef struct stat3 { uint64_t calls, untimed, total; } stat3;

static stat3 stat_of(const char *path) {
  stat3 r = {0, 0, 0};
  collprof_snapshot s;
  if (collprof_snapshot_take(&s) != 0) return r;
  const collprof_path_stat *p = h1_find(&s, path);
  if (p) {
    r.calls = p->calls;
    r.untimed = p->untimed_calls;
    r.total = p->total_ns;
  }
  collprof_snapshot_free(&s);
  return r;
}

int main(void) {
  setenv("COLLPROF_HOST_SAMPLE", "4", 1);
  setenv("NCCL_PROFILE_EVENT_MASK", "4031", 1);   /* no KernelCh to begin with */
  setenv("COLLPROF_GPU_SAMPLE", "0", 1);
  setenv("COLLPROF_LAUNCH_SAMPLE", "0", 1);
  h1_env(NULL);
  void *a = h1_init(0xB10C1, 0);
  if (!ok(a != NULL, "a communicator")) return done_testing();

  /* warm-up: every path timed once (a path's first count asks for that),
   * the memo filled; then whole blocks only */
  for (int i = 0; i < 16; i++) h1_nvlink_call(a, "AllReduce", 256);
  const char *GA = "GroupApi", *CO = "GroupApi/CollApi:AllReduce/Coll:AllReduce";
  const stat3 g0 = stat_of(GA), c0 = stat_of(CO);
  enum { N = 400 };
  for (int i = 0; i < N; i++) h1_nvlink_call(a, "AllReduce", 256);
  const stat3 g1 = stat_of(GA), c1 = stat_of(CO);
  const uint64_t gt = (g1.calls - g1.untimed) - (g0.calls - g0.untimed);
  const uint64_t ct = (c1.calls - c1.untimed) - (c0.calls - c0.untimed);
  is_u(g1.calls - g0.calls, N, "GroupApi: every call counted");
  is_u(gt, N / 4, "HOST_SAMPLE=4: exactly a quarter of the GroupApi starts timed (one decision per call)");
  is_u(ct, N / 4, "...and of the Coll starts");
  is_u(c1.calls - c0.calls, N, "Coll: every call counted");
  ok(g1.total > g0.total && c1.total > c0.total, "timed calls keep their durations");

  /* GPU sampling on, through the live mask: KernelCh on one call in 2
   * (COLLPROF_GPU_SAMPLE is read once; the mask the plugin sets is what
   * NCCL reads, so turn KernelCh on by hand for every other call) */
  const stat3 g2 = stat_of(GA);
  for (int i = 0; i < N; i++) {
    if (i & 1) h1_mask |= ncclProfileKernelCh;
    else h1_mask &= ~ncclProfileKernelCh;
    h1_nvlink_call(a, "AllReduce", 256);
  }
  h1_mask &= ~ncclProfileKernelCh;
  const stat3 g3 = stat_of(GA);
  is_u(g3.calls - g2.calls, N, "with KernelCh on every other call: every call counted");
  is_u((g3.calls - g3.untimed) - (g2.calls - g2.untimed), N / 4,
       "...and still exactly a quarter timed (a KernelCh call's start handed on, not decided twice)");
  return done_testing();
}
