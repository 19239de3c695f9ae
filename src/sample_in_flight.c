/*
 * sample_in_flight.c — one sampled call's KernelCh at a time: the gate
 * that mask_control.c asks at the outermost group stop before it
 * publishes a wanted sample.
 *
 * One sample in flight: a sampled call is published (KernelCh on) only
 * once every KernelCh event of the previous sampled calls has stopped;
 * until then a wanted sample is skipped (counted: gpuSamplesDeferred),
 * and the next decision is the rule's as usual.  Skipped, not carried
 * to the first call after: which call that is depends on when the GPU
 * caught up, often the first call after the host waited for it (the
 * end of a timed loop, a phase, a barrier), so carried samples would
 * sit on calls chosen by timing rather than by the rule.  Why one in
 * flight: the kernel writes each channel's start and stop
 * timestamps into one of 64 slots (by the channel's work counter, which
 * counts every work item) and NCCL's proxy thread reads them late, often
 * milliseconds late and in bursts (seen on H200: up to 250 ms behind with
 * KernelCh on every call).  A later KernelCh-on item that lands in the
 * same slot first overwrites it, and NCCL hands the plugin the other
 * item's times: spans that are negative or milliseconds long.  With one
 * sampled call in flight no other item writes a slot.  Expected events
 * come from the plugin (cp_mask_kc_expect at a sampled Coll/P2p: its
 * nChannels; cp_mask_kc_done at each of their KernelCh stops); if none
 * stops for 100 ms the expectation is dropped (a new epoch, counted), so
 * a lost event cannot stop sampling.  N = 1 has every call sampled and no
 * such guard: parent_link.h then discards spans whose slot may have been
 * reused (gpuSamplesDropped).
 */
#include "mask_state.h"
#include "config.h"
#include "clock.h"
#include "affinity.h"

#include <stdatomic.h>
#pragma GCC visibility push(hidden)

/* KernelCh events still due, and the epoch that a reset after
 * GATE_STALL_NS without progress starts anew. */
static atomic_long g_kc_due;
static atomic_uint g_kc_epoch = 1;
static _Atomic uint64_t g_kc_progress;  /* KernelCh stops seen (any epoch) */
static _Atomic uint64_t g_deferred_total, g_gate_resets;
static _Atomic uint64_t g_gate_since, g_gate_mark; /* outermost group stops (one thread, or frozen) */
#define GATE_STALL_NS 100000000ull        /* 100 ms without a KernelCh stop */

/* At the outermost group stop, before publishing: skip a wanted sample
 * while an earlier one's KernelCh events are due (cp_mk.gated), unless
 * none has stopped for GATE_STALL_NS (a lost expectation: start afresh). */
void cp_mask_gate(void) {
  if (cp_mk.n < 2 || atomic_load_explicit(&cp_mk.frozen, memory_order_relaxed)) return;
  int want = atomic_load_explicit(&cp_mk.next_kc, memory_order_relaxed);
  int due = atomic_load_explicit(&g_kc_due, memory_order_acquire) > 0;
  int hold = 0;
  /* cp_mk.deferred: an episode of skipping, from the first skipped sample
   * until nothing is due (g_kc_due > 0); the stall clock runs from its
   * start or from the last KernelCh stop seen in it, whatever calls go by
   * unsampled meanwhile */
  if (want && due) {
    uint64_t now = cp_clock_now(), done = atomic_load_explicit(&g_kc_progress, memory_order_relaxed);
    if (!atomic_load_explicit(&cp_mk.deferred, memory_order_relaxed) ||
        done != atomic_load_explicit(&g_gate_mark, memory_order_relaxed)) {
      atomic_store_explicit(&g_gate_since, now, memory_order_relaxed);   /* skipping starts, or */
      atomic_store_explicit(&g_gate_mark, done, memory_order_relaxed);   /* KernelCh still come */
      hold = 1;
    } else if (now - atomic_load_explicit(&g_gate_since, memory_order_relaxed) < GATE_STALL_NS) {
      hold = 1;
    } else {
      atomic_fetch_add_explicit(&g_kc_epoch, 1, memory_order_relaxed);   /* late stops no longer count */
      atomic_store_explicit(&g_kc_due, 0, memory_order_release);
      atomic_fetch_add_explicit(&g_gate_resets, 1, memory_order_relaxed);
      due = 0;
    }
  }
  if (hold) {
    atomic_fetch_add_explicit(&g_deferred_total, 1, memory_order_relaxed);   /* one skipped */
    if (!atomic_exchange_explicit(&cp_mk.deferred, 1, memory_order_relaxed)) cp_affinity_gpu_lag();
  } else if (!due && atomic_load_explicit(&cp_mk.deferred, memory_order_relaxed)) {
    atomic_store_explicit(&cp_mk.deferred, 0, memory_order_relaxed);   /* the episode is over */
  }
  if (atomic_load_explicit(&cp_mk.gated, memory_order_relaxed) != hold)
    atomic_store_explicit(&cp_mk.gated, hold, memory_order_relaxed);
}

uint32_t cp_mask_kc_expect(uint32_t n) {
  if (cp_mk.n < 2 || n == 0) return 0;
  atomic_fetch_add_explicit(&g_kc_due, (long)n, memory_order_relaxed);
  return atomic_load_explicit(&g_kc_epoch, memory_order_relaxed);
}

void cp_mask_kc_done(uint32_t epoch) {
  if (epoch == 0) return;
  atomic_fetch_add_explicit(&g_kc_progress, 1, memory_order_relaxed);
  if (epoch == atomic_load_explicit(&g_kc_epoch, memory_order_relaxed))
    atomic_fetch_sub_explicit(&g_kc_due, 1, memory_order_release);
}

void cp_mask_kc_lost(void) {
  if (cp_mk.n < 2) return;
  long due = atomic_load_explicit(&g_kc_due, memory_order_relaxed);
  while (due > 0 && !atomic_compare_exchange_weak_explicit(&g_kc_due, &due, due - 1, memory_order_release,
                                                           memory_order_relaxed)) {}
  atomic_fetch_add_explicit(&g_kc_progress, 1, memory_order_relaxed);
}

uint64_t cp_mask_samples_deferred(void) {
  return atomic_load_explicit(&g_deferred_total, memory_order_relaxed);
}
uint64_t cp_mask_gate_resets(void) { return atomic_load_explicit(&g_gate_resets, memory_order_relaxed); }

#pragma GCC visibility pop
