/*
 * replay_synth.h — building blocks of the synthetic streams (replay_synth.c).
 *
 * A generator starts events the way NCCL would: it reads the activation mask
 * at each API call (sy_call), keeps or drops each event by NCCL's rules for
 * that mask, passes parentObj = the parent's handle (NULL when the parent
 * was dropped), and for a v4 plugin drops API events and hangs Coll/P2p
 * under their Group.  Each event carries the id of its expected call path in
 * a per-generator table; sy_stop counts it there, and sy_tab_flush adds the
 * counts to the --expect output.  Element names must be string literals (the
 * table compares pointers).
 */
#ifndef COLLPROF_REPLAY_SYNTH_H
#define COLLPROF_REPLAY_SYNTH_H
#include "replay.h"

#define SY_MAXPATH 128
#define SY_ROOT (-1)      /* no parent: the element is a root */
#define SY_FOREIGN (-2)   /* parent is a foreign pointer (PXN): "@PXN" root */

typedef struct sy_tab {
  int n;
  int parent[SY_MAXPATH];
  const char *elem[SY_MAXPATH];
  uint64_t count[SY_MAXPATH];
  uint64_t states[SY_MAXPATH];   /* state callbacks made on events of the path */
} sy_tab;

typedef struct sy_ev {
  void *h;
  sy_tab *tab;  /* where its states are counted */
  int kept;     /* a callback was made (and not dropped by the mask) */
  int path;     /* sy_tab id */
} sy_ev;

/* Mask of one API call, read once at its start (NCCL's snapshot). */
typedef struct sy_call { int m; } sy_call;
static inline void sy_call_begin(sy_call *c) { c->m = rp_mask_read(); }

/* Start an event.  parent: the sy_ev it hangs under (NULL: d->parentObj is
 * passed as given: NULL or a foreign pointer, path root per `foreign`).
 * group: the Group of a Coll/P2p (parentGroup; the parent under v4). */
void sy_start(sy_tab *t, sy_ev *e, const sy_call *call, void *ctx,
              const sy_ev *parent, const sy_ev *group,
              ncclProfilerEventDescr_v5_t *d, const char *elem, int foreign);
void sy_stop(sy_tab *t, sy_ev *e);
void sy_state(sy_ev *e, int state, int argkind, uint64_t arg);
void sy_tab_flush(sy_tab *t);   /* adds counts and states to rp_expect */
/* The path string of table entry id ("@PXN" for a foreign root). */
size_t sy_tab_render(const sy_tab *t, int id, char *buf, size_t cap);

/* Descriptors for the common types. */
void sy_d_groupapi(ncclProfilerEventDescr_v5_t *d, int rank, int graph);
void sy_d_collapi(ncclProfilerEventDescr_v5_t *d, int rank, const char *func, size_t count, int graph);
void sy_d_simple(ncclProfilerEventDescr_v5_t *d, uint64_t type, int rank);
void sy_d_coll(ncclProfilerEventDescr_v5_t *d, int rank, const char *func, uint64_t seq,
               size_t count, int nch);
void sy_d_proxyop(ncclProfilerEventDescr_v5_t *d, int rank, int pid, int ch, int peer,
                  int nsteps, int is_send);
void sy_d_proxystep(ncclProfilerEventDescr_v5_t *d, int rank, int step);
void sy_d_kernelch(ncclProfilerEventDescr_v5_t *d, int rank, int ch, uint64_t ptimer);

/* One full NCCL-like API call (GroupApi/CollApi/KernelLaunch/Group/Coll),
 * Coll left open so the caller can hang children under it.  The events are
 * in *api (5 entries: groupapi, collapi, launch, group, coll). */
typedef struct sy_apicall { sy_call call; sy_ev ga, ca, kl, g, coll; } sy_apicall;
void sy_apicall_run(sy_tab *t, sy_apicall *a, void *ctx, int rank, const char *func,
                    const char *collapi_elem, const char *coll_elem, uint64_t seq,
                    size_t count, int nch, int graph, int stop_coll);

/* A fake GPU clock: monotonically increasing ns values near 1.8e18. */
uint64_t sy_gpu_now(void);

#endif
