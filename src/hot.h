/*
 * hot.h — the process-wide words every callback reads, on one cache line.
 *
 * In a real job NCCL's own work between two callbacks pushes collprof's
 * cache lines out of L1, so each line a callback touches is a miss of its
 * own (pool.h; test/bench/lines_per_event.sh counts them).  These flags
 * used to be globals of the modules that own them, four lines apart;
 * together they are one.  Each stays owned by its module, which alone
 * writes it (rarely: at init, fork, shutdown, a change of mode, and the
 * clock's re-anchor 2 ms to 1 s apart); the hot path only loads them,
 * relaxed (the clock map pointer with acquire: clock.h).
 */
#ifndef COLLPROF_HOT_H
#define COLLPROF_HOT_H
#include <stdatomic.h>
#include <stdint.h>

typedef struct cp_hot_words {
  _Atomic int pid;               /* plugin.c: this process (refreshed after fork) */
  _Atomic int stopped;           /* plugin.c: collprof_shutdown() was called */
  _Atomic int trace_on;          /* plugin.c: records go to the trace rings */
  int capture_on;                /* capture.c: the callback capture is on */
  int pool_asym;                 /* pool_owner.c: owners rely on membarrier(2) */
  _Atomic uint32_t path_count;   /* paths.c: path ids in use */
  atomic_int off;                /* profiling_windows.c: recording is off (paused, or
                                    outside a profiling window); read at each
                                    API call's GroupApi start */
  atomic_uint off_epoch;         /* profiling_windows.c: recording went off or on this
                                    many times (a thread's call rate measured
                                    across it would count the time off) */
  atomic_int trace_accept;       /* trace_writer.c: the rings take records
                                    (cp_trace_accept, trace_ring.h) */
  int defer_on;                  /* proxy_defer.c: COLLPROF_PROXY_DEFER (cp_defer_on),
                                    read at every start */
  atomic_int lean_live;          /* mask_control.c: lean calls are on and the mask
                                    not frozen: a counted call that is not lean
                                    carries CP_CLS_BIT (call_modes.h, hs_decide) */
  atomic_int fini_any;           /* plugin.c: some communicator was finalized; until
                                    then the fast paths need not read their pool's
                                    own flag (a line a counted stop or state
                                    would touch for nothing else) */
  /* clock.c: the current TSC-to-ns map (cp_clock_cur, clock.h), replaced
   * at each re-anchor (2 ms .. 1 s apart); every timestamp reads it */
  struct cp_clock_map *_Atomic clock_cur;
} cp_hot_words;
_Static_assert(sizeof(cp_hot_words) <= 64, "cp_hot: one cache line");

extern _Alignas(64) cp_hot_words cp_hot;

#endif
