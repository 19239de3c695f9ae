/*
 * mask_control.c — owns the value of NCCL's live activation mask
 * (interface and context: mask_control.h): what it is now (effective), when
 * it is stored (publish, at the outermost group stop: the one point no
 * call is half-way through a group), and when it never changes again
 * (the freeze).  The rules that decide it have a file each and share the
 * state in mask_state.h:
 *   - gpu_sample_rule.c: which API call gets KernelCh (GPU sampling);
 *   - sample_in_flight.c: one sampled call's KernelCh at a time;
 *   - start_delay.c: no KernelCh in the first D ms where threads may start;
 *   - profiling_windows.c: periods and the application's pause.
 * Lean calls and the mask while off are this file's:
 *
 * Lean calls (COLLPROF_LEAN=1): a call that host sampling only counts
 * (call_modes.h, "Host sampling") and that runs without KernelCh needs no
 * event below its CollApi/P2pApi: each Coll/P2p is one per CollApi/P2pApi,
 * of the same func and bytes (every capture in shared/fixtures), so
 * start_counted.c counts it from its API event.  Yet NCCL still calls the
 * plugin for the Group, Coll, KernelLaunch and proxy events of such a
 * call, and counting those cost collprof more than 2 points of a 10 us all-reduce
 * on 4 H200s (test/gpu/ab.sh: mask 4031 counted at 1.0268 of paused, the
 * API events alone at 1.0067, the do-nothing plugin at 4031 1.0067).  So
 * when the plugin says at a call's outermost group stop that the next
 * call will be only counted (cp_mask_on_group_stop's lean_ok) and no
 * KernelCh is wanted, the mask published for it is the lean one:
 * GroupApi, CollApi, P2pApi and, if the base has it, ProxyCtrl (a proxy
 * thread's own events, tied to no call).  The other types' counts then
 * come from the calls that had them, scaled up (snapshot.c).  Never
 * while frozen (a freeze publishes the base: the other bits may change at
 * any time, only KernelCh must not), and a window's first call is full.
 *
 * Freeze: NCCL 2.28 hangs in ncclCommDestroy when KernelCh changes between
 * a CUDA graph's capture and its replays, or while another thread is
 * inside a group (seen on H200 with a plugin that only flips the bit).
 * So a graph-captured call (cp_mask_on_graph_capture) or a GroupApi from a
 * second thread (cp_mask_on_group_start) freezes KernelCh as it is then,
 * for good, with one line on stderr and the reason in the rank record;
 * with it off the other bits still follow (lean calls stop), with it on
 * the whole mask stays.  start_delay.c keeps KernelCh off in a process's
 * first D ms so that threads starting together find it off.
 *
 * Off (paused, or outside a window) is not quite 0.  A CUDA graph captured
 * while NCCL sends no callback is invisible to collprof, and once KernelCh
 * is on again its replays differ from its capture in KernelCh: NCCL 2.28
 * then hangs in ncclCommDestroy (the freeze below exists for that); a
 * second calling thread that started while off would likewise go
 * unnoticed.  So while KernelCh may ever be switched on (N >= 1), the
 * mask off is GroupApi alone: NCCL sends one GroupApi (start, two states,
 * stop) per API call, nothing else (ABI doc: no child type needs it), and
 * start_counted.c only hands it to the freeze rules, records nothing and
 * counts nothing (cp_hot.off).  With N = 0 the mask off is 0.  Recording
 * off is also decided at each GroupApi, so a call whose mask was read just before
 * the switch is either wholly recorded or wholly ignored.  Frozen with
 * KernelCh off, the other bits still follow (only KernelCh must stay as
 * the freeze found it); frozen with KernelCh on, the mask stays as it is
 * and pausing only stops the recording.
 *
 * Stores to NCCL's int are relaxed atomics; hooks are lock-free and O(1).
 */
#include "mask_state.h"
#include "config.h"
#include "nccl_profiler_abi.h"
#include "hot.h"
#include "nap.h"   /* cp_mono_ns */

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#pragma GCC visibility push(hidden)

struct cp_mask_state cp_mk = {.in_window = 1};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;

/* The mask NCCL should read now (frozen with KernelCh on: publish and
 * profiling_windows.c's close_window change nothing at all). */
static uint32_t effective(void) {
  if (cp_mk.off) return 0;                /* user asked for nothing */
  /* the callbacks' off flag too: it follows cp_mask_profiling_on() a
   * moment late (profiling_windows.c: cp_mask_window_edge, after
   * cp_mk.in_window or cp_mk.paused changed), and a publish from another
   * thread in between must not turn the mask on while the callbacks still
   * drop every call as off */
  if (!cp_mask_profiling_on() || atomic_load_explicit(&cp_hot.off, memory_order_relaxed)) return cp_mk.watch;
  if (atomic_load(&cp_mk.frozen)) return cp_mk.base;   /* frozen with KernelCh off */
  int kc = atomic_load_explicit(&cp_mk.next_kc, memory_order_relaxed) &&
           !atomic_load_explicit(&cp_mk.kc_wait, memory_order_relaxed) &&
           !atomic_load_explicit(&cp_mk.gated, memory_order_relaxed) &&
           !atomic_load_explicit(&cp_mk.start_delay, memory_order_relaxed);
  if (kc) return cp_mk.base | KC;
  return atomic_load_explicit(&cp_mk.next_lean, memory_order_relaxed) ? cp_mk.lean_mask : cp_mk.base;
}

/* Store the mask if it changed.  With periods, re-check the window after the
 * store: the timer may have closed it meanwhile (seq_cst pairs with the
 * timer's store of cp_mk.in_window), and a stale non-zero mask must not stay. */
void cp_mask_publish(void) {
  int *p = atomic_load_explicit(&cp_mk.ptr, memory_order_relaxed);
  if (!p || atomic_load_explicit(&cp_mk.frozen_kc, memory_order_relaxed)) return;
  uint32_t v = effective();
  if ((uint32_t)__atomic_load_n(p, __ATOMIC_RELAXED) != v)
    __atomic_store_n(p, (int)v, __ATOMIC_RELAXED);
  if (atomic_load_explicit(&cp_mk.win_used, memory_order_relaxed)) {
    atomic_thread_fence(memory_order_seq_cst);
    uint32_t v2 = effective();
    if (v2 != v) __atomic_store_n(p, (int)v2, __ATOMIC_RELAXED);
  }
}

static void init_once(void) {
  const cp_config *c = cp_config_get();
  cp_mk.base = c->event_mask & ~KC & NCCL_PROFILE_ALL_EVENTS;
  cp_mk.n = c->gpu_sample > 0 ? (uint32_t)c->gpu_sample : 0;
  cp_mk.space_ns = (uint64_t)c->gpu_sample_us * 1000u;
  cp_mk.small_m = c->gpu_sample_small_bytes ? c->gpu_sample_small : 1;
  cp_mk.small_bytes = c->gpu_sample_small_bytes;
  cp_mk.off = (c->event_mask & NCCL_PROFILE_ALL_EVENTS) == 0;
  /* A mask of KernelCh alone cannot be sampled: an unsampled call would
   * read 0, send no callback, and nothing would turn KernelCh back on. */
  if (cp_mk.base == 0 && cp_mk.n > 1) cp_mk.n = 1;
  if (atomic_load(&cp_mk.v4) && cp_mk.n > 1) {
    cp_warn("COLLPROF_GPU_SAMPLE=%u needs the v5 profiler API (NCCL 2.28): this NCCL uses v4, "
            "which gives no safe point to switch KernelCh, so it stays off "
            "(COLLPROF_GPU_SAMPLE=1 turns it on for every call)", cp_mk.n);
    cp_mk.n = 0;
  }
  atomic_store(&cp_mk.next_kc, cp_mk.n >= 1);     /* the first call is sampled */
  atomic_store(&cp_mk.next_first, cp_mk.n >= 2);  /* ...as a first-call sample (N = 1: all calls are) */
  cp_mask_delay_setup(c);                 /* ...unless the start delay runs */
  cp_mk.watch = cp_mk.n >= 1 && !atomic_load(&cp_mk.v4) ? (uint32_t)ncclProfileGroupApi : 0;
  cp_mk.t0 = cp_mono_ns();
  cp_mk.have_periods = cp_mask_periods_parse(c->periods);
  if (c->start_paused) atomic_store(&cp_mk.paused, 1);
  /* N = 1 too: a pause with KernelCh on waits for a group stop */
  cp_mk.lean_mask = (uint32_t)(ncclProfileGroupApi | ncclProfileCollApi | ncclProfileP2pApi) |
                    (cp_mk.base & (uint32_t)ncclProfileProxyCtrl);
  cp_mk.lean_on = c->lean && !atomic_load(&cp_mk.v4) && !cp_mk.off && (cp_mk.base & ~cp_mk.lean_mask) != 0;
  atomic_store(&cp_hot.lean_live, cp_mk.lean_on && !atomic_load(&cp_mk.frozen));
  cp_mk.switching = cp_mk.n >= 1 || cp_mk.have_periods || cp_mk.lean_on;
  if (cp_mk.have_periods || atomic_load(&cp_mk.paused)) atomic_store(&cp_mk.win_used, 1);
  if (cp_mk.have_periods) atomic_store(&cp_mk.in_window, 0);
  /* the first window: from now if profiling is on (a pause before the
   * first init counts from here) */
  atomic_store(&cp_mk.inited, 1);
  cp_mask_window_edge(cp_mk.t0);
  if (cp_mk.have_periods) cp_mask_periods_start();
}

void cp_mask_init(void) { pthread_once(&g_once, init_once); }

uint32_t cp_mask_attach(int *eActivationMask) {
  cp_mask_init();
  if (!eActivationMask) return 0;
  cp_mask_delay_attached();   /* the start delay's count of inits */
  atomic_store(&cp_mk.ptr, eActivationMask);
  if (atomic_load(&cp_mk.frozen))          /* keep the frozen value (one int per process) */
    return (uint32_t)__atomic_load_n(eActivationMask, __ATOMIC_RELAXED);
  uint32_t v = effective();
  __atomic_store_n(eActivationMask, (int)v, __ATOMIC_RELAXED);
  if (cp_mk.have_periods) {
    atomic_thread_fence(memory_order_seq_cst);
    uint32_t v2 = effective();
    if (v2 != v) __atomic_store_n(eActivationMask, (int)(v = v2), __ATOMIC_RELAXED);
  }
  return v;
}

void cp_mask_api_v4(void) { atomic_store(&cp_mk.v4, 1); }

static char g_frozen_text[96];         /* for the rank record, set once at the freeze */
static atomic_int g_frozen_text_ready; /* ...and published after it is written */

static void freeze(const char *why, const char *hazard) {
  if (atomic_load_explicit(&cp_mk.frozen, memory_order_relaxed)) return;
  const int kc = cp_mask_kernelch_on();
  /* cp_mk.frozen_kc before cp_mk.frozen: a publish that sees the freeze sees how */
  if (kc) atomic_store(&cp_mk.frozen_kc, 1);
  if (atomic_exchange(&cp_mk.frozen, 1)) return;
  atomic_store(&cp_hot.lean_live, 0);   /* no lean call any more (below) */
  atomic_store(&cp_mk.next_first, 0);   /* from now on every call is alike */
  /* no lean call any more: with KernelCh off, the base (effective) */
  if (atomic_exchange(&cp_mk.next_lean, 0) && !kc) cp_mask_publish();
  snprintf(g_frozen_text, sizeof g_frozen_text, "%s, KernelCh %s", why, kc ? "on" : "off");
  atomic_store_explicit(&g_frozen_text_ready, 1, memory_order_release);
  /* Only KernelCh must stay as it is: with it off, windows and pauses
   * still switch the other bits (publish, close_window); with it on,
   * nothing changes any more and periods end here. */
  if (cp_mk.n <= 1 && !cp_mk.have_periods) return;   /* nothing would change anyway: no notice */
  cp_warn("%s: the event mask is frozen from now on (KernelCh %s, no more GPU sampling%s), "
          "because NCCL 2.28 hangs in ncclCommDestroy when KernelCh changes %s",
          why, kc ? "on for every call" : "off", cp_mk.have_periods && kc ? " or profiling periods" : "",
          hazard);
}

void cp_mask_on_group_start(int tid) {
  /* Frozen: the count of open groups is never read again, and every
   * calling thread writing it would move its cache line between them at
   * every call (collprof-bench, 2 threads on 2 communicators, default
   * mask: 1.07x the events per second of one before, 1.32x and 1.69x in
   * two runs after; this VM's spread is large). */
  if (!cp_mk.switching || atomic_load_explicit(&cp_mk.frozen, memory_order_relaxed)) return;
  int first = atomic_load_explicit(&cp_mk.group_tid, memory_order_relaxed);
  if (__builtin_expect(first == tid, 1) ||
      (first == 0 && atomic_compare_exchange_strong(&cp_mk.group_tid, &first, tid))) {
    /* first still 0: this is the process's first group start, which
     * starts the start delay's clock, or skips the delay (start_delay.c) */
    if (__builtin_expect(first == 0, 0)) cp_mask_delay_begin(tid);
    /* Only the first calling thread counts its groups (a second thread
     * freezes the mask, after which the count is never read), so a plain
     * load and store do, not a locked read-modify-write at every call. */
    atomic_store_explicit(&cp_mk.open_groups, atomic_load_explicit(&cp_mk.open_groups, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    return;
  }
  freeze("NCCL calls from a second thread", "while another thread is inside a group");
}

void cp_mask_on_group_stop(int lean_ok) {
  if (!cp_mk.switching || atomic_load_explicit(&cp_mk.frozen, memory_order_relaxed)) return;
  /* the first calling thread's stop (cp_mask_on_group_start: no other
   * thread stops a group before the mask is frozen) */
  const int open = atomic_load_explicit(&cp_mk.open_groups, memory_order_relaxed);
  atomic_store_explicit(&cp_mk.open_groups, open - 1, memory_order_relaxed);
  if (open != 1) return;
  if (__builtin_expect(atomic_load_explicit(&cp_mk.start_delay, memory_order_relaxed), 0)) cp_mask_delay_tick();
  if (atomic_load_explicit(&cp_mk.kc_wait, memory_order_relaxed)) atomic_store(&cp_mk.kc_wait, 0);
  const int lean = cp_mk.lean_on && lean_ok;
  if (atomic_load_explicit(&cp_mk.next_lean, memory_order_relaxed) != lean)
    atomic_store_explicit(&cp_mk.next_lean, lean, memory_order_relaxed);
  /* The common case, a call after which no sample is wanted, none is
   * being skipped and neither periods nor a pause were ever used:
   * cp_mask_gate() would change nothing and effective() is the base or
   * lean mask (not frozen, above; profiling on, since only periods and
   * pauses turn it off). */
  if (__builtin_expect(!(atomic_load_explicit(&cp_mk.next_kc, memory_order_relaxed) |
                         atomic_load_explicit(&cp_mk.gated, memory_order_relaxed) |
                         atomic_load_explicit(&cp_mk.deferred, memory_order_relaxed) |
                         atomic_load_explicit(&cp_mk.win_used, memory_order_relaxed)), 1)) {
    int *p = atomic_load_explicit(&cp_mk.ptr, memory_order_relaxed);
    const int v = (int)(lean ? cp_mk.lean_mask : cp_mk.base);
    if (p && !atomic_load_explicit(&cp_mk.frozen_kc, memory_order_relaxed) && __atomic_load_n(p, __ATOMIC_RELAXED) != v)
      __atomic_store_n(p, v, __ATOMIC_RELAXED);
    return;
  }
  cp_mask_gate();
  cp_mask_publish();   /* no group open: the one point where KernelCh may change */
}

void cp_mask_on_graph_capture(void) {
  freeze("CUDA graph capture seen", "between a graph's capture and its replays");
}

const char *cp_mask_frozen_text(void) {
  return atomic_load_explicit(&g_frozen_text_ready, memory_order_acquire) ? g_frozen_text : "";
}

int cp_mask_frozen(void) { return atomic_load_explicit(&cp_mk.frozen, memory_order_relaxed); }

int cp_mask_lean_on(void) { return cp_mk.lean_on; }

int cp_mask_lean_value(uint32_t v) { return cp_mk.lean_on && v == cp_mk.lean_mask; }

uint32_t cp_mask_now(void) {
  int *p = atomic_load_explicit(&cp_mk.ptr, memory_order_relaxed);
  return p ? (uint32_t)__atomic_load_n(p, __ATOMIC_RELAXED) : 0;
}

int cp_mask_kernelch_on(void) { return (cp_mask_now() & KC) != 0; }

#pragma GCC visibility pop
