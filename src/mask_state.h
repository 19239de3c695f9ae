/*
 * mask_state.h — the state that the files deciding NCCL's activation mask
 * share, and what they call of each other.  Private to them:
 * mask_control.c (the value, its publishing, the freeze), gpu_sample_rule.c,
 * sample_in_flight.c, start_delay.c and profiling_windows.c; everyone else
 * goes through mask_control.h.
 *
 * One struct, one definition (mask_control.c): the hooks read its fields
 * as they read file statics before (a hidden symbol plus an offset), and
 * the fields a rule alone uses stay static in that rule's file.  Fields
 * under "set once" are written by the first attach (cp_mask_init) and only
 * read after, except where a comment says otherwise.
 */
#ifndef COLLPROF_MASK_STATE_H
#define COLLPROF_MASK_STATE_H
#include "mask_control.h"
#include "config.h"
#include "nccl_profiler_abi.h"

#include <stdatomic.h>
#include <stdint.h>
#pragma GCC visibility push(hidden)

#define KC ((uint32_t)ncclProfileKernelCh)

struct cp_mask_state {
  /* set once */
  _Atomic(int *) ptr;          /* NCCL's process-wide mask int (each attach stores it) */
  uint32_t base;               /* base mask (config), KernelCh stripped */
  uint32_t n;                  /* gpu_sample */
  uint32_t watch;              /* the mask while off: GroupApi, or 0 for N = 0 */
  uint32_t lean_mask;          /* what a lean call asks for (mask_control.c, "Lean calls") */
  uint32_t small_m;            /* gpu_sample_small: small calls' blocks are M x N (gpu_sample_rule.c) */
  int off;                     /* the user's mask is 0: never profile */
  int switching;               /* N != 0, periods or lean: the mask may change at a group stop */
  int lean_on;                 /* COLLPROF_LEAN, v5, and the lean mask is narrower than the base */
  int have_periods;            /* COLLPROF_PERIODS parsed and its timer runs (0 again if it cannot start) */
  uint64_t space_ns;           /* gpu_sample_us in ns: spaced blocks (gpu_sample_rule.c), 0 = blocks of N */
  uint64_t small_bytes;        /* ...below this many bytes; 0: no call is small */
  uint64_t t0;                 /* CLOCK_MONOTONIC ns at first attach */
  /* the decision for the next API call (gpu_sample_rule.c), published at a group stop */
  atomic_int next_kc;          /* KernelCh wanted */
  atomic_int next_first;       /* ...and it is a first-call sample */
  atomic_int next_lean;        /* the next call is lean (when KernelCh is off) */
  atomic_int kc_wait;          /* window just opened: KernelCh waits for a group stop */
  atomic_int gated;            /* published KernelCh off: a sample is in flight (sample_in_flight.c) */
  atomic_int deferred;         /* samples are being skipped (sample_in_flight.c) */
  atomic_int start_delay;      /* the start delay is running (start_delay.c) */
  /* profiling on or off (profiling_windows.c) */
  atomic_int in_window;        /* 0 outside a profiling window */
  atomic_int paused;           /* collprof_pause (or COLLPROF_START_PAUSED) */
  atomic_int win_used;         /* periods or a pause: the text lists windows */
  atomic_int inited;           /* cp_mask_init ran: t0 and the mask values are set */
  /* the freeze (mask_control.c) */
  atomic_int frozen;           /* graph capture / second thread: KernelCh constant */
  atomic_int frozen_kc;        /* ...and on: then the whole mask is constant */
  atomic_int v4;               /* the v4 API: no GroupApi events (set by every v4 init, on
                                  any thread, while another may be attaching) */
  /* the first calling thread's groups (mask_control.c) */
  atomic_int open_groups;      /* GroupApi events started, not stopped */
  atomic_int group_tid;        /* thread of the first GroupApi (0 = none yet) */
};
extern struct cp_mask_state cp_mk;

static inline int cp_mask_profiling_on(void) {
  return atomic_load(&cp_mk.in_window) && !atomic_load(&cp_mk.paused);
}

/* mask_control.c: read the configuration once (every entry that needs it
 * calls this first); store the mask NCCL should read now if it changed. */
void cp_mask_init(void);
void cp_mask_publish(void);

/* sample_in_flight.c: at the outermost group stop, before publishing, with
 * N >= 2 and not frozen: sets cp_mk.gated (hold a wanted sample back). */
void cp_mask_gate(void);

/* start_delay.c: at cp_mask_init (may start the delay: cp_mk.start_delay);
 * at each attach (the inits the default rule compares with commIds); at
 * the process's first group start, on its thread (the delay's clock starts,
 * or the default rule skips it); at the first thread's outermost group
 * stops while it runs (it ends D after that start). */
void cp_mask_delay_setup(const cp_config *c);
void cp_mask_delay_attached(void);
void cp_mask_delay_begin(int tid);
void cp_mask_delay_tick(void);

/* profiling_windows.c: at cp_mask_init, parse COLLPROF_PERIODS (1: there
 * are periods) and then start its timer (which may fail: profiling all the
 * time, cp_mk.have_periods back to 0); after cp_mk.in_window or
 * cp_mk.paused changed (t: when, CLOCK_MONOTONIC), make the recorded
 * windows and the callbacks' off flag follow. */
int cp_mask_periods_parse(const char *s);
void cp_mask_periods_start(void);
void cp_mask_window_edge(uint64_t t);

#pragma GCC visibility pop
#endif
