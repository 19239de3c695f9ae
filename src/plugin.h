/*
 * plugin.h — the recording core's internal entry points, shared by the NCCL
 * callbacks (plugin.c, event_*.c), the self-cost probe (selfcost.c) and
 * the snapshot (snapshot.c).  The callbacks themselves are in
 * ncclProfiler_v5/_v4.
 */
#ifndef COLLPROF_PLUGIN_H
#define COLLPROF_PLUGIN_H
#include <stdint.h>
#include "nccl_profiler_abi.h"
#include "pool.h"

/* The shared implementation of both ABI versions (v4 converts first;
 * v4 = 1 routes the API-call hook of the mask control to Coll/P2p). */
ncclResult_t cp_core_start(void *context, void **eHandle,
                           const ncclProfilerEventDescr_v5_t *d, int v4);
ncclResult_t cp_core_stop(void *eHandle);
ncclResult_t cp_core_state(void *eHandle, int eState, const ncclProfilerEventStateArgs_v5_t *a);
/* NCCL's stopEvent and recordEventState as the exported structs name them
 * (event_stop.c, event_state.c): the counted events' short ways, the
 * deferred proxy callbacks (proxy_defer.h), then the core. */
ncclResult_t cp_api_stop(void *eHandle);
ncclResult_t cp_v5_state(void *eHandle, ncclProfilerEventState_v5_t st, ncclProfilerEventStateArgs_v5_t *a);
ncclResult_t cp_v4_state(void *eHandle, ncclProfilerEventState_v4_t st, ncclProfilerEventStateArgs_v4_t *a);

/* Pool of a handle's comm index: 0 detach pool, CP_COMM_SCRATCH the
 * self-cost pool, else the registry's.  NULL if none. */
cp_pool *cp_core_pool_for(uint32_t comm_index, uint32_t lane);

/* Self-cost probe: route events of context `ctx` to the unregistered
 * scratch pool p (NULL/0 to stop).  Such events record nothing. */
void cp_core_set_scratch(cp_pool *p, uint64_t ctx);
/* Measure the per-event cost (selfcost.c); called once at first init. */
double cp_selfcost_measure(void);

/* Numbers for the snapshot. */
uint64_t cp_core_bad_calls(void);
/* The exported structs name the timing wrappers (1) or the plain callbacks
 * (0): cost_sample.c's windows. */
void cp_plugin_timed(int on);
int cp_core_nccl_version(void);
double cp_core_event_cost(void);

#endif
