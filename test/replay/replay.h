/*
 * replay.h — collprof-replay: plays recorded (or synthetic) NCCL profiler
 * callbacks through a profiler plugin, the way NCCL 2.28 calls it.
 *
 * Stages, one file each:
 *   replay_host.c    loads the plugin like NCCL (NCCL_PROFILER_PLUGIN rules,
 *                    ncclProfiler_v5 then _v4), makes the calls (v5 -> v4
 *                    conversion), owns the process-wide activation mask,
 *                    counts callbacks, dlcloses after the last finalize
 *   replay_rules.c   NCCL 2.28's emission rules for a mask (ABI doc)
 *   replay_parse.c   reads one capture file (shared/fixtures format) into
 *                    lines and events, links parents/handles/contexts by index
 *   replay_engine.c  one thread per recorded tid, a sequencer that keeps
 *                    file order, live mask emulation per API call
 *   replay_synth*.c  generated streams for what no capture covers
 *   replay_expect.c  per-path expected counts written by the generators
 *   replay_main.c    options, MPI_Init/MPI_Finalize, file choice, summary
 */
#ifndef COLLPROF_REPLAY_H
#define COLLPROF_REPLAY_H
#include <stddef.h>
#include <stdint.h>
#include "nccl_profiler_abi.h"

/* ---- host: the plugin as NCCL sees it (replay_host.c) ---- */

/* Options for loading; set before the first rp_host_init. */
void rp_host_configure(const char *lib /* NULL: NCCL_PROFILER_PLUGIN rules */,
                       int force_api /* 0 newest first, 5 or 4 */);
/* The interface in use once loaded: 5, 4, or 0 (no plugin). */
int rp_host_api(void);
/* The api the engine should convert to before anything is loaded (force_api
 * or, when not forced, what the library offers); loads the plugin. */
int rp_host_probe_api(void);

/* The process-wide activation mask (one int, 0 at start, like NCCL). */
int *rp_host_mask_ptr(void);
static inline int rp_mask_read(void) {
  return __atomic_load_n(rp_host_mask_ptr(), __ATOMIC_RELAXED);
}

/* Calls into the plugin.  Each loads the plugin if needed (init), counts the
 * callback, and is skipped when no plugin is loaded.  rp_host_start takes a
 * v5 descriptor and converts it for a v4 plugin (caller drops API events). */
ncclResult_t rp_host_init(void **ctx, uint64_t comm_id, const char *name,
                          int nnodes, int nranks, int rank);
ncclResult_t rp_host_start(void *ctx, void **handle,
                           ncclProfilerEventDescr_v5_t *d);
ncclResult_t rp_host_stop(void *handle);
ncclResult_t rp_host_state(void *handle, int state,
                           ncclProfilerEventStateArgs_v5_t *args);
/* Finalize one communicator; after the last one that init'ed, dlclose. */
ncclResult_t rp_host_fini(void *ctx, int counts_for_unload);

/* A symbol of the loaded plugin (its collprof_* API), NULL when none. */
void *rp_host_sym(const char *name);

/* Counters for the summary line. */
uint64_t rp_host_callbacks(void);
uint64_t rp_host_event_callbacks(void);   /* start, stop and state callbacks only */
uint64_t rp_host_inits(void);     /* init calls made */
uint64_t rp_host_finis(void);     /* finalize calls made */
uint64_t rp_host_events_started(void);
void rp_count_dropped(uint64_t n);
uint64_t rp_dropped(void);
/* stops NCCL makes on its kept CollApi/P2pApi handle in a call that did
 * not start one (replay_engine.c) */
void rp_count_stale_api_stop(void);
uint64_t rp_stale_api_stops(void);

/* ---- rules (replay_rules.c) ---- */
/* Whether NCCL 2.28 emits an event of this type for an API call whose mask
 * is m (ancestors needed by enabled types included; ProxyCtrl and events
 * without an API call by their own bit). */
int rp_rule_keep(uint64_t type, int m);
/* True for the API-level types v4 does not know. */
int rp_is_api_type(uint64_t type);
const char *rp_type_short(uint64_t type);

/* ---- captures (replay_parse.c) ---- */
enum { RP_INIT = 1, RP_START, RP_STATE, RP_STOP, RP_FINI };
enum { RP_ARG_NONE = 0, RP_ARG_TRANS, RP_ARG_APPENDED, RP_ARG_PTIMER, RP_ARG_OTHER };

typedef struct rp_line {
  uint8_t cb, argkind;
  int32_t thr;       /* thread index (0..nthreads-1) */
  int32_t ref;       /* start/state/stop: event index; init/fini: comm index; -1 unknown */
  int32_t state;
  uint64_t t;        /* recorded CLOCK_MONOTONIC ns */
  uint64_t raw;      /* state/stop with unknown handle, fini with unknown ctx */
  uint64_t arg;
} rp_line;

typedef struct rp_event {
  ncclProfilerEventDescr_v5_t d;  /* strings interned; pointers filled at replay */
  int32_t parent;     /* recorded parent's event index, -1 when none/unknown */
  int32_t pgroup;     /* Coll/P2p: parentGroup's event index, -1 */
  int32_t comm;       /* context's comm index, -1 unknown */
  int32_t root;       /* API call this event belongs to (event index), -1 */
  int32_t thr;
  uint64_t raw_parent, raw_pgroup, raw_ctx; /* as recorded, for unknown ones */
  uint8_t pid_local;  /* proxyOp.pid was the recording process */
  /* replay state, written by the thread that runs the start line */
  uint8_t decided, kept;
  int mask;           /* roots: mask read at their start */
  void *handle;
} rp_event;

typedef struct rp_comm {
  uint64_t comm_id;
  const char *name;
  int nnodes, nranks, rank;
  uint64_t raw_ctx;
  void *ctx;
  int ok;             /* init returned success */
} rp_comm;

typedef struct rp_capture {
  rp_line *lines; size_t nlines;
  rp_event *events; size_t nevents;
  rp_comm *comms; size_t ncomms;
  long *tids; int nthreads;
  int file_pid;
  int file_mask;
} rp_capture;

/* Read a capture; 0 on success (errors on stderr). */
int rp_capture_read(const char *path, rp_capture *c);
/* Its arrays (interned strings stay). */
void rp_capture_free(rp_capture *c);
/* Assign API-call roots for interface v (5: GroupApi; 4: Group). */
void rp_capture_roots(rp_capture *c, int api);
/* A string that stays valid until the process ends (same text, same pointer). */
const char *rp_intern(const char *s);

/* ---- engine (replay_engine.c) ---- */
/* Replay a capture; returns the number of threads used, -1 on error. */
int rp_replay(rp_capture *c, int api, int timed);

/* ---- synthetic streams (replay_synth*.c) ---- */
typedef struct rp_synth_opts {
  const char *name;
  long count;         /* stream-specific size; <= 0 default */
  int threads;        /* threads stream; <= 0 default */
  const char *expect; /* --expect FILE or NULL */
} rp_synth_opts;
/* Returns the number of threads used, -1 for an unknown stream. */
int rp_synth_run(const rp_synth_opts *o);
int rp_synth_reuse(const rp_synth_opts *o);
int rp_synth_graph(const rp_synth_opts *o);
int rp_synth_pxn(const rp_synth_opts *o);
int rp_synth_threads(const rp_synth_opts *o);
int rp_synth_badinput(const rp_synth_opts *o);
int rp_synth_fuzz(const rp_synth_opts *o);

/* ---- expected counts (replay_expect.c) ---- */
/* Thread-safe per-path counters: events that stopped, state callbacks. */
void rp_expect_add(const char *path, uint64_t n, uint64_t states);
/* FILE: JSON {"path":events}; FILE.states: {"path":states}; FILE.info:
 * {"inits":..,"finis":..} (the plugin writes a lifecycle record for each).
 * 0 ok. */
int rp_expect_write(const char *file);

/* stderr line prefixed "collprof-replay: " */
void rp_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
