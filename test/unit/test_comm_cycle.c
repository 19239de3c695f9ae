/*
 * test_comm_cycle.c — communicators created and finalized in a loop (what a
 * job that splits/destroys communicators repeatedly does): each finalize
 * releases its pool's slots, so memory stays bounded over 1000 cycles,
 * while nothing measured is lost or misattributed:
 *   - an event still live at finalize is counted as unterminated on its path;
 *   - a Coll's pending GPU span (its KernelCh children stopped after it) is
 *     accounted before the slots go;
 *   - a child started on another communicator after the finalize, naming a
 *     handle of the finalized one, still gets the full path (from the handle
 *     bits), not "UnknownParent";
 *   - stops and states on the finalized communicator's handles are refused
 *     and counted as bad calls.
 * Expected numbers are the loop's own counts, not read from the plugin.
 */
#include <stdint.h>
#include <string.h>
#include "tap.h"
#include "h1_util.h"

#define CYCLES 1000
#define WARM 20
#define GS 1000000000ull        /* KernelCh pTimer at start */
#define GSPAN 5000ull           /* and its stop 5 us later */

static uint64_t snap_memory(void) {
  collprof_snapshot s;
  if (collprof_snapshot_take(&s) != 0) return 0;
  uint64_t m = s.memory_bytes;
  collprof_snapshot_free(&s);
  return m;
}

/* One cycle on a fresh communicator; `keep` (never finalized) gets a child
 * of the finalized one's Coll afterwards. */
static void one_cycle(uint64_t id, void *keep, uint64_t *bad_expected) {
  void *a = h1_init(id, 0);
  void *g = h1_start(a, ncclProfileGroupApi, NULL, NULL);
  void *c = h1_start(a, ncclProfileCollApi, g, "AllReduce");
  void *co = h1_start(a, ncclProfileColl, c, "AllReduce");
  void *live = h1_start(a, ncclProfileColl, c, "AllReduce");   /* never stops */
  ncclProfiler_v5.stopEvent(co);
  ncclProfiler_v5.stopEvent(c);
  ncclProfiler_v5.stopEvent(g);
  /* KernelCh after its Coll stopped: the Coll's span stays pending in its
   * (blacklisted, then released) slot until finalize accounts it. */
  void *k = h1_start_kch(a, co, GS);
  h1_kch_stop(k, GS + GSPAN);
  ncclProfiler_v5.finalize(a);
  /* After finalize: state and stop on its handles are bad calls. */
  ncclProfilerEventStateArgs_v5_t args;
  memset(&args, 0, sizeof args);
  ncclProfiler_v5.recordEventState(live, ncclProfilerProxyOpInProgress_v4, &args);
  ncclProfiler_v5.stopEvent(live);
  *bad_expected += 2;
  /* A child elsewhere naming the finalized Coll: right path, no parent update. */
  void *x = h1_start(keep, ncclProfileProxyOp, co, "Send");
  ncclProfiler_v5.stopEvent(x);
}

int main(void) {
  h1_env(NULL);
  void *keep = h1_init(0xabc0, 1);
  uint64_t bad_expected = 0;
  for (int i = 0; i < WARM; i++) one_cycle(0x1000 + (uint64_t)i, keep, &bad_expected);
  uint64_t bad0 = h1_bad_calls();
  uint64_t m0 = snap_memory();
  for (int i = WARM; i < CYCLES; i++) one_cycle(0x1000 + (uint64_t)i, keep, &bad_expected);
  uint64_t m1 = snap_memory();
  uint64_t per = m1 > m0 ? (m1 - m0) / (CYCLES - WARM) : 0;
  diag("memory after %d cycles: %llu bytes, after %d: %llu (%llu bytes per cycle)", WARM,
       (unsigned long long)m0, CYCLES, (unsigned long long)m1, (unsigned long long)per);
  /* A pool's first chunk alone is 1024 slots (hundreds of KB): a cycle that
   * kept it would add that much.  What may stay is the registry entry and
   * the pool header (handles name their index), well under 4 KB. */
  ok(m0 > 0 && m1 > 0 && per < 4096, "memory bounded over %d init/finalize cycles (< 4 KB per cycle)", CYCLES);
  is_u(h1_bad_calls() - bad0, bad_expected - 2 * WARM,
       "stops and states after finalize counted as bad calls");

  collprof_snapshot s;
  ok(collprof_snapshot_take(&s) == 0, "snapshot");
  const collprof_path_stat *co = h1_find(&s, "GroupApi/CollApi:AllReduce/Coll:AllReduce");
  const collprof_path_stat *kc = h1_find(&s, "GroupApi/CollApi:AllReduce/Coll:AllReduce/KernelCh");
  const collprof_path_stat *px = h1_find(&s, "GroupApi/CollApi:AllReduce/Coll:AllReduce/ProxyOp:Send");
  ok(co && kc && px, "paths present (the child on the other communicator kept its full path)");
  if (co) {
    is_u(co->calls, CYCLES, "Coll calls: the stopped one of each cycle");
    is_u(co->unterminated, CYCLES, "Coll live at finalize counted as unterminated");
    is_u(co->gpu_samples, CYCLES, "pending Coll GPU spans accounted at finalize");
    is_u(co->gpu_ns, (uint64_t)CYCLES * GSPAN, "Coll GPU time = KernelCh span per cycle");
  }
  if (kc) is_u(kc->calls, CYCLES, "KernelCh calls");
  if (px) is_u(px->calls, CYCLES, "ProxyOp on the other communicator, one per cycle");
  ok(h1_find(&s, "UnknownParent/ProxyOp:Send") == NULL, "no child fell to UnknownParent");
  collprof_snapshot_free(&s);
  ncclProfiler_v5.finalize(keep);
  return done_testing();
}
