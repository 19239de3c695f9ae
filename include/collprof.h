/*
 * collprof.h — what libcollprof.so (the NCCL profiler plugin) offers to the
 * layers after it: libcollprof-mpi.so (MPI_Init/MPI_Finalize wrappers and the
 * online collation), collprof-collate (offline) and the tests.
 *
 * Data flow: the plugin records events into per-path profiles and a JSONL
 * trace.  At MPI_Init the MPI layer tells it the world rank and the output
 * folder (collprof_set_identity).  At MPI_Finalize the MPI layer takes a
 * snapshot (collprof_snapshot), makes the plugin write its own data to disk
 * (collprof_write_local), collates over MPI, then hands back the global IDs
 * (collprof_write_global) so the rank file ends with global path records.
 * Without MPI the plugin does collprof_write_local itself at exit.
 *
 * Every function here is safe to call at any time, from any thread, before
 * or after NCCL loaded or unloaded the plugin (the library pins itself in
 * memory on first use), and never aborts the process.
 */
#ifndef COLLPROF_H
#define COLLPROF_H

#include <stdint.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define COLLPROF_VERSION "0.1.0"

/* Per call path, per process.  Times in nanoseconds. */
typedef struct collprof_path_stat {
  uint32_t local_id;      /* id used in this process's event records */
  uint64_t hash;          /* XXH3_64bits of the canonical path string */
  const char *path;       /* canonical string, e.g. "GroupApi/CollApi:AllReduce" */
  uint32_t leaf_type;     /* NCCL event-type bit of the last element */
  const char *leaf_func;  /* func of the last element, "" if none */
  uint64_t calls;         /* events that stopped */
  uint64_t total_ns;      /* sum of durations */
  uint64_t self_ns;       /* total minus children that started and stopped inside */
  uint64_t min_ns, max_ns;/* per event; 0/0 when calls == 0 */
  uint64_t bytes;         /* Coll/P2p: count x datatype size, summed */
  uint64_t states;        /* state records of events on this path */
  uint64_t gpu_ns;        /* KernelCh: sum of GPU durations; Coll/P2p: sum of
                             sampled GPU spans (latest child stop - earliest start) */
  uint64_t gpu_samples;   /* number of events that contributed to gpu_ns */
  uint64_t gpu_first_ns;  /* Coll/P2p: the part of gpu_ns from first-call samples
                             (a thread's, a path's or a window's first sampled
                             call: connection set-up, waiting for late peers),
                             counted once in the estimate, not extrapolated */
  uint64_t gpu_first_samples; /* the samples in gpu_first_ns */
  uint64_t gpu_est_ns;    /* Coll/P2p: this process's estimate of the GPU time
                             of gpu_est_calls of its calls, per message-size
                             class (src/gpu_estimate.h); sums across ranks */
  uint64_t gpu_est_calls; /* calls covered by gpu_est_ns: all of them once the
                             path has a periodic sample, else its first-call
                             samples only */
  uint64_t gpu_outliers;  /* periodic samples counted once as outliers */
  uint64_t gpu_borrowed_calls; /* of gpu_est_calls, those of a message-size
                             class without a periodic sample of its own,
                             given the nearest sampled classes' mean
                             (src/gpu_estimate.h) */
  void *gpu_classes;      /* Coll/P2p with samples: the calls and samples per
                             size class behind gpu_est_ns (src/gpu_estimate.h,
                             written as the path record's gpuSizes); NULL
                             otherwise; freed by collprof_snapshot_free */
  uint64_t gpu_launch_ns; /* Coll/P2p: sum of the GPU times of its timed kernel
                             launches (CUDA events on the launch stream around
                             the launch: src/launch_timer.h), each launch
                             holding this one Coll/P2p; first launches of a
                             thread left out */
  uint64_t gpu_launch_samples; /* the launches in gpu_launch_ns */
  uint64_t gpu_launch_calls; /* Coll/P2p: its calls of a size the launch timer
                             times (COLLPROF_LAUNCH_MIN_BYTES or more, by size
                             class: src/gpu_estimate.h), for which the mean of
                             gpu_launch_ns stands */
  uint64_t unterminated;  /* started, never stopped (counted at snapshot) */
  uint64_t untimed_calls; /* of calls, those counted without a time (host
                             sampling, COLLPROF_HOST_SAMPLE): total_ns and
                             self_ns are then estimates, the timed events'
                             sums times calls / (calls - untimed_calls) (their
                             weighted mean under auto), and
                             min/max are the timed events'; 0 = all timed */
  uint64_t timed_weight_extra; /* COLLPROF_HOST_SAMPLE=auto: the timed events'
                             weights beyond 1, summed (src/host_sample.h):
                             before the snapshot's estimate, total_ns and
                             self_ns hold each time times its weight; the
                             estimate is then total_ns * calls / (calls -
                             untimed_calls + timed_weight_extra) */
  uint64_t unseen_calls;  /* of calls, those estimated, not seen: a path below
                             a Coll/P2p (ProxyOp, ProxyStep, NetPlugin) or
                             below or beside a GroupApi (KernelLaunch, Group)
                             in a run with lean calls (COLLPROF_LEAN), where
                             NCCL sent its events only in the calls that were
                             not lean: calls is then those seen times the
                             anchor's calls / its calls that were not lean
                             (src/snapshot.c, scale_unseen), and its
                             untimed_calls and states grow with it; 0 =
                             every call seen */
} collprof_path_stat;

/* One communicator this process initialised. */
typedef struct collprof_comm_info {
  uint64_t comm_id;
  char comm_name[64];
  int nranks, nnodes, nccl_rank;
  char gpu_uuid[40];      /* "" without a CUDA driver */
  uint64_t events;        /* events recorded in this communicator */
  int finalized;
  /* GPU %globaltimer minus host CLOCK_MONOTONIC, estimated from KernelCh
   * callbacks (min over samples of pTimer_start - host start ts: the host
   * sees a kernel start after it happened).  valid = 0 without samples. */
  int64_t gpu_offset_ns;
  int gpu_offset_valid;
} collprof_comm_info;

typedef struct collprof_snapshot {
  /* identity */
  int pid;
  char host[256];
  int world_rank, world_size;      /* -1/0 when not known */
  /* time */
  uint64_t start_mono_ns, end_mono_ns;   /* CLOCK_MONOTONIC */
  int64_t start_wall_ns;                 /* CLOCK_REALTIME at start_mono_ns */
  /* configuration in effect */
  uint32_t event_mask;             /* base mask (before GPU sampling) */
  int gpu_sample;                  /* KernelCh on one API call in N; 0 never */
  int trace_on;
  int nccl_version;                /* ncclGetVersion code, 0 when unknown */
  char periods[128];               /* COLLPROF_PERIODS as given, "" if none */
  char windows[1024];              /* the windows that were profiled, seconds after
                                      the first communicator init ("0.050-0.100
                                      0.150-0.200"; one still open ends in "-open");
                                      "" when profiling was never switched off */
  /* counters */
  uint64_t events_recorded;        /* events started (PXN included) */
  uint64_t events_pxn;
  uint64_t events_counted;         /* events of untimed calls counted on their path
                                      without a slot or trace record (host
                                      sampling, COLLPROF_HOST_SAMPLE); not in
                                      events_recorded */
  uint64_t unterminated;
  uint64_t blacklist_evictions;
  uint64_t unknown_parent;         /* events attributed to the UnknownParent element */
  uint64_t trace_dropped;          /* trace records lost to a full buffer */
  uint64_t bad_calls;              /* NULL/foreign handles, double stops, ... */
  uint64_t gpu_sampled_calls;      /* API calls that ran with KernelCh on */
  uint64_t gpu_samples_dropped;    /* KernelCh GPU spans discarded as untrustworthy:
                                      NCCL's per-channel timestamp slot may have
                                      been rewritten before its proxy read it */
  uint64_t gpu_samples_deferred;   /* samples skipped (the name is older) because an earlier
                                      sample's KernelCh events were still due */
  uint64_t gpu_launches_timed;     /* kernel launches timed by CUDA events
                                      (COLLPROF_LAUNCH_SAMPLE, src/launch_timer.h) */
  uint64_t gpu_launches_unattributed; /* of those: none or several Coll/P2p in the launch */
  uint64_t gpu_launches_skipped;   /* wanted but not timed: stream being captured,
                                      too many in flight, no context, a CUDA error */
  uint64_t gpu_launches_unread;    /* timed but never read: the GPU had not
                                      finished at finalize, or a CUDA error */
  uint64_t gpu_launches_idle;      /* of the timed: the stream was idle before the
                                      kernel arrived, so the time holds the host's
                                      launch latency (not in the per-path numbers) */
  char mask_frozen[96];            /* why the mask stopped changing, "" if it did not
                                      (e.g. "CUDA graph capture seen, KernelCh off") */
  uint64_t memory_bytes;           /* pools, path table, trace buffers */
  double per_event_cost_ns;        /* measured by the plugin on itself at start-up */
  /* collprof's own callbacks timed where NCCL calls them, in windows at
   * random times (src/cost_sample.c; COLLPROF_COST_SAMPLE_MS) */
  uint64_t cost_callbacks;         /* callbacks timed, all threads */
  uint64_t cost_timed_ns;          /* their time */
  uint64_t cost_windows;           /* windows opened */
  uint64_t cost_window_ns;         /* time the windows were open */
  uint64_t cost_span_ns;           /* time since sampling started */
  uint64_t cost_slow_ns;           /* of both, what the timing itself took */
  uint64_t cost_est_ns;            /* every callback's time, estimated: timed x (span -
                                      slow) / (window - slow) + cost_setup_ns; 0 when no
                                      window opened */
  int64_t cost_err_ns;             /* its standard error (the windows' spread); 0 with
                                      every callback timed, -1 unknown (< 2 windows) */
  /* the first stratum, the dense phase of windows at the start (span 0:
   * the run was scaled as one); the cost_* above include it */
  uint64_t cost_dense_span_ns, cost_dense_windows, cost_dense_window_ns, cost_dense_timed_ns,
           cost_dense_callbacks, cost_dense_slow_ns, cost_dense_est_ns;
  uint64_t cost_setup_ns;          /* one-off set-ups (a thread's block and trace ring,
                                      new paths, pool growth), timed whole wherever
                                      they ran: not in cost_timed_ns, in cost_est_ns */
  int gpu_sample_small;            /* API calls under gpu_sample_small_bytes: KernelCh
                                      on one in gpu_sample x this (1: as the rest) */
  uint64_t gpu_sample_small_bytes; /* 0: no call counts as small */
  uint32_t gpu_sample_delay_ms;    /* no KernelCh sample in the first this many ms
                                      (COLLPROF_GPU_SAMPLE_DELAY_MS), as it ran: 0
                                      where the default found one rank of each
                                      communicator */
  int gpu_sample_delay_auto;       /* the delay is the default rule (the variable
                                      unset, "auto" or bad): none for a process with
                                      one rank of each communicator at its first call */
  /* tables */
  size_t npaths;
  collprof_path_stat *paths;       /* indexed by local_id */
  size_t ncomms;
  collprof_comm_info *comms;
} collprof_snapshot;

/* Fill *out with a consistent copy of the local profile.  Returns 0 on
 * success.  Release with collprof_snapshot_free.  Once MPI_Finalize has
 * begun under the MPI layer (collprof_set_mpi_managed), the run has ended:
 * every snapshot is a copy of the first one taken then, the one the
 * summary is collated from. */
int collprof_snapshot_take(collprof_snapshot *out);
void collprof_snapshot_free(collprof_snapshot *s);

/* One message-size class of a Coll/P2p path with GPU samples: calls of
 * [lo, 2 lo) bytes per call (lo 0: no size), their GPU samples and spans
 * (first-call ones included, and apart), the longest periodic sample; then
 * the rank's own estimate of the class (src/gpu_estimate.h): GPU ns
 * covering est_calls calls, outliers counted once and their ns, calls lent
 * the neighbouring classes' mean.  The classes' est_ns add up to the
 * path's gpu_est_ns.  The rank file's "gpuSizes" entries, in this order. */
typedef struct collprof_size_class {
  uint64_t lo, calls, samples, first_samples, ns, first_ns, max_ns;
  uint64_t est_ns, est_calls, outliers, outlier_ns, lent;
} collprof_size_class;
#define COLLPROF_SIZE_CLASSES 42   /* the most a path has */

/* p's classes with calls or samples, smallest first, into out (room for
 * COLLPROF_SIZE_CLASSES); returns how many (0: a path without classes). */
size_t collprof_path_size_classes(const collprof_path_stat *p, collprof_size_class *out);

/* At MPI_Init: the world rank and size, and the folder rank 0 chose (NULL:
 * keep the plugin's own rule).  The trace becomes <dir>/rank<R>.jsonl; if it
 * was already open as pid<PID>.jsonl it is moved. */
void collprof_set_identity(int world_rank, int world_size, const char *outdir);

/* Clock offset of this rank to rank 0 (ns to add to local CLOCK_MONOTONIC
 * to get rank 0's), and the round trip it was measured with. */
void collprof_set_clock_offset(int64_t offset_ns, int64_t rtt_ns);

/* The output folder in effect (created if missing).  Never NULL. */
const char *collprof_output_dir(void);

/* Flush the trace and append to this process's JSONL the path records
 * (local ids, hashes, strings, numbers) and the rank summary record; once
 * the run has ended (collprof_snapshot_take), also a record without
 * numbers ("afterFinalize") per path first seen since, which the trace
 * records of later events name.  Idempotent.  Returns 0 on success. */
int collprof_write_local(void);

/* After collation: rewrite the path records at the end of the JSONL with
 * their global ids.  global_ids[local_id] for every local path. */
int collprof_write_global(const int64_t *global_ids, size_t n);

/* Stop recording (later callbacks are ignored and counted), flush, close. */
void collprof_shutdown(void);

/* The plugin's clock: CLOCK_MONOTONIC in ns, plus a test-only skew
 * (COLLPROF_TEST_CLOCK_SKEW_NS="s0,s1,..." indexed by the world rank from
 * OMPI_COMM_WORLD_RANK/PMIX_RANK, or one number) so tests can check that
 * clock alignment removes a known offset.  Every timestamp collprof writes
 * comes from this clock; the MPI layer's clock sync uses it too. */
uint64_t collprof_now_ns(void);

/* Async-signal-safe: write what the trace buffers hold as whole lines
 * (for SIGTERM/SIGINT handlers of the MPI layer; no locks, no malloc).
 * The trace file stays locked afterwards, so no write can be cut short by
 * the kill that follows; a handler whose process goes on calls
 * collprof_resume_after_signal().  The MPI layer looks both up with dlsym. */
void collprof_flush_signal_safe(void);
void collprof_resume_after_signal(void);

/* Set by the MPI layer so that the plugin's own exit-time writing does not
 * run twice and knows MPI will do it. */
void collprof_set_mpi_managed(int on);

/* ---- For applications: recording off and on ----
 * As Vftrace's vftrace_pause()/vftrace_resume() and Score-P's
 * SCOREP_RECORDING_OFF/ON: profile only the part of a run that matters
 * (skip the warm-up, keep a few training steps).  collprof_pause() stops
 * recording from the next NCCL API call on (a call already in progress is
 * recorded whole); collprof_resume() starts it again.  While paused NCCL
 * is asked for almost nothing (one GroupApi per call, none without GPU
 * sampling: src/mask_control.c says why), nothing is recorded or counted,
 * and the summary lists the windows that were profiled.  Both return
 * whether recording was paused before the call, are idempotent (not
 * nested), safe from any thread at any time, also before NCCL's first
 * init, and cost a few atomic stores: no system call but the clock.
 * COLLPROF_START_PAUSED=1 (launcher: --paused) starts paused.
 *
 * A program need not link libcollprof.so to call them: under the launcher
 * or the MPI layer's preload the symbols are global, so a weak declaration
 *   extern int collprof_resume(void) __attribute__((weak));
 *   if (collprof_resume) collprof_resume();
 * or dlsym(RTLD_DEFAULT, "collprof_resume") (ctypes.CDLL(None) in Python)
 * finds them when collprof is there and does nothing when it is not. */
int collprof_pause(void);
int collprof_resume(void);
/* 1 while paused by collprof_pause() or COLLPROF_START_PAUSED. */
int collprof_paused(void);

#ifdef __cplusplus
}
#endif
#endif
