/*
 * proxy_defer.h — NCCL's proxy-thread callbacks, recorded raw on that
 * thread and applied to the profile later, by a collprof thread.
 *
 * Why.  On 2 H200 over NVLink, NCCL's proxy thread is on the critical path
 * of 128 KiB-8 MiB all-reduces whenever KernelCh is on: a do-nothing plugin
 * made 300 ns slower per KernelCh start and per KernelCh-stop state makes
 * them 3-4.7x slower than without a plugin (test/gpu/timed_plugin.c,
 * overhead.sh's timed-spinN-all).  collprof's own KernelCh work there cost
 * 230-460 ns more than the do-nothing plugin's per KernelCh (cold lines:
 * the parent Coll written by the application thread, the slot, the
 * profile, the trace ring), so with every event on every call NCCL ran
 * slower under collprof than under the do-nothing plugin at 1-8 MiB.
 *
 * What.  With COLLPROF_PROXY_DEFER=1 a callback for a type only NCCL's
 * proxy thread sends (ProxyOp, ProxyStep, ProxyCtrl, KernelCh, NetPlugin)
 * and every stop and state on a handle such a start returned only appends
 * one 64-byte record (callback, host time, arguments) to a ring of the
 * calling thread and returns: a handful of stores to lines the thread
 * alone writes.  The start's handle is a deferred one (tag 0xB, below): a
 * ring number, an id of the ring and its generation.  A collprof thread
 * (the "applier") takes the records in order and makes the same calls into
 * the core (plugin.h) that the callbacks would have made, with the
 * recorded time and the recording thread's id, mapping deferred handles to
 * the core's.  So every number, path and trace record is what the inline
 * callbacks give, only made later and elsewhere.
 *
 * Bounds.  A ring holds CP_DQ_RECS records; when it is full, the recording
 * thread applies its own ring first (under the same lock as the applier):
 * nothing is dropped, the callback is then not constant-time, and the
 * occasions are counted (cp_defer_counts).  Ids are reused first-in
 * first-out (CP_DQ_IDS - 1 of them: id 0 is never handed out), so a stopped
 * handle stays resolvable for CP_DQ_IDS - 2 later starts of its thread
 * (fewer while other events of the thread are live); a stop or state on an
 * older one is reported stale.
 * cp_defer_flush applies everything recorded so far (finalize, snapshot,
 * shutdown call it).  Off with COLLPROF_CAPTURE (the capture records the
 * callbacks as NCCL made them) and in a forked child.
 */
#ifndef COLLPROF_PROXY_DEFER_H
#define COLLPROF_PROXY_DEFER_H
#include "hot.h"
#include <stdint.h>
#include "nccl_profiler_abi.h"

/* Deferred handle, 64 bits: 63..60 tag 0xB, 59..48 ring number, 47..32
 * generation of the id (never 0), 31..0 id. */
#define CP_DQ_TAG 0xBULL
enum { CP_DQ_RECS = 8192, CP_DQ_IDS = 16384, CP_DQ_MAX = 256 };

/* The proxy-side types: the ones only NCCL's proxy thread sends. */
#define CP_DQ_TYPES \
  (ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileProxyCtrl | ncclProfileKernelCh | ncclProfileNetPlugin)

/* COLLPROF_PROXY_DEFER, read at first init; 0 in a forked child: a word of
 * cp_hot (hot.h), the line every callback reads anyway */
#define cp_defer_on (cp_hot.defer_on)

static inline int cp_defer_type(uint64_t type) { return cp_defer_on && (type & CP_DQ_TYPES) && !(type & (type - 1)); }
static inline int cp_defer_handle(const void *h) { return ((uint64_t)(uintptr_t)h >> 60) == CP_DQ_TAG; }

/* At first init: read the configuration, start the applier (when on). */
void cp_defer_setup(void);

/* The recording callbacks (the deferred-type start, and stop/state on a
 * deferred handle).  v4: the start came through the v4 interface. */
ncclResult_t cp_defer_start(void *context, void **eHandle, const ncclProfilerEventDescr_v5_t *d, int v4);
ncclResult_t cp_defer_stop(void *eHandle);
ncclResult_t cp_defer_state(void *eHandle, int eState, const ncclProfilerEventStateArgs_v5_t *a);

/* Apply every record made so far (any thread; blocks while the applier
 * works on a batch). */
void cp_defer_flush(void);

/* Tests only: hold (1) or let go (0) the applier thread, so that a test
 * can fill a ring for certain (proxy_defer.c says why). */
void cp_defer_hold_applier(int hold);

typedef struct cp_defer_counts {
  uint64_t recorded;   /* callbacks recorded */
  uint64_t applied;    /* records applied */
  uint64_t full;       /* times a full ring was applied by its own thread */
  uint64_t stale;      /* stops/states on a deferred handle no longer resolvable */
} cp_defer_counts;
void cp_defer_get_counts(cp_defer_counts *o);

#endif
