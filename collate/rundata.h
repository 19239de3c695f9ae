/*
 * rundata.h — the data model of one profiled run, shared by everything that
 * reads or reports it (collate/, mpi_wrap/, the exporters collate/export_*.c).
 *
 * Two layers:
 *   1. What each rank recorded (cp_rank_data): the tail records of its JSONL
 *      file (path records, the rank summary record, the clock record), or
 *      the same fields taken from a collprof_snapshot by the MPI layer.
 *      A cp_run is all ranks of one output folder.
 *   2. What collation made of it (cp_summary): the global call paths with
 *      their global IDs (position in the set of unique (hash, path string)
 *      ordered by hash, then by the string's bytes), the numbers combined
 *      over ranks, and run-level totals.  summary.log and summary.json are
 *      written from a cp_summary only, whether it was built online (MPI tree
 *      in mpi_wrap/) or offline (collprof-collate), so both agree number for
 *      number: every combined number is an integer (sums, min/max with the
 *      lowest rank on ties); derived doubles are computed from those
 *      integers by one function (cp_gpath_derive).
 *
 * Units: times in nanoseconds (uint64), timestamps CLOCK_MONOTONIC ns of
 * the rank's own clock (add clock_offset_ns for rank 0's clock), wall
 * times ns since the epoch.  Strings are NUL-terminated UTF-8 owned by the
 * structure that holds them unless said otherwise.
 */
#ifndef COLLPROF_RUNDATA_H
#define COLLPROF_RUNDATA_H
#include <stdint.h>
#include <stddef.h>

/* ---- layer 1: one rank ---- */

/* One "path" record: a call path of one process, with its local numbers. */
/* One message-size class of a Coll/P2p path on one rank (the rank file's
 * "gpuSizes", src/gpu_estimate.h): calls of [lo, 2*lo) bytes (lo 0: no
 * size), their GPU samples and spans, first-call ones included; then the
 * rank's estimate of the class (cp_gcls_est): GPU ns covering est_calls
 * calls, outliers and their ns, calls lent a neighbour's mean (has_est 0:
 * a file from before, without them). */
typedef struct cp_size_rec {
  uint64_t lo, calls, samples, first_samples, ns, first_ns, max_ns;
  uint64_t est_ns, est_calls, outliers, outlier_ns, lent;
  int has_est;
} cp_size_rec;

typedef struct cp_path_rec {
  int64_t id;              /* global id, -1 when not collated */
  uint32_t local;          /* id used in this rank's event records ("path") */
  uint64_t hash;           /* XXH3_64bits of path, as the plugin recorded it */
  char *path;              /* "GroupApi/CollApi:AllReduce/Coll:AllReduce" */
  uint32_t leaf_type;      /* NCCL event-type bit of the last element, 0 unknown */
  char *leaf_func;         /* func of the last element, "" if none */
  uint64_t calls, total_ns, self_ns, min_ns, max_ns, bytes, states;
  uint64_t gpu_ns;         /* KernelCh: GPU time; Coll/P2p: sum of sampled spans */
  uint64_t gpu_samples;    /* events that contributed to gpu_ns */
  uint64_t gpu_first_ns, gpu_first_samples;   /* of them, first-call samples (collprof.h) */
  uint64_t gpu_est_ns, gpu_est_calls, gpu_outliers;   /* the rank's size-class estimate (collprof.h) */
  uint64_t gpu_borrowed_calls;   /* of gpu_est_calls, given other classes' mean (collprof.h) */
  int has_est;             /* gpu_est_* present (files from before: absent) */
  uint64_t gpu_launch_ns, gpu_launch_samples;   /* timed kernel launches (collprof.h) */
  uint64_t gpu_launch_calls;   /* Coll/P2p: calls of a timed launch's size (collprof.h) */
  int has_launch_calls;        /* gpu_launch_calls present (files from before: absent) */
  uint64_t unterminated;
  uint64_t untimed_calls;  /* of calls, counted without a time (host sampling, collprof.h) */
  uint64_t unseen_calls;   /* of calls, estimated (lean calls, collprof.h) */
  size_t nsizes;
  cp_size_rec *sizes;      /* "gpuSizes" (rank files only: collprof-collate --sizes) */
} cp_path_rec;

/* One communicator of the rank (the "comms" list of the rank record). */
typedef struct cp_comm_rec {
  uint64_t comm_id;
  char comm_name[64];
  int nranks, nnodes, nccl_rank;
  char gpu_uuid[40];
  uint64_t events;
  int64_t gpu_offset_ns;   /* GPU pTimer minus host clock; valid if gpu_offset_valid */
  int gpu_offset_valid;
} cp_comm_rec;

typedef struct cp_rank_data {
  char *file;              /* file it was read from, NULL for a snapshot */
  int has_rank_rec;        /* the "rank" record was present */
  int rank;                /* MPI world rank; -1 without MPI */
  int world_size;          /* 0 when unknown */
  int pid;
  char host[256];
  int64_t start_wall_ns;   /* CLOCK_REALTIME at start_ns */
  uint64_t start_ns, end_ns;          /* CLOCK_MONOTONIC (startTs/endTs x 1000) */
  uint32_t event_mask;
  int gpu_sample, trace_on, nccl_version;
  int gpu_sample_small;    /* rank record gpuSampleSmall (absent: 1, one in N for all) */
  uint64_t gpu_sample_small_bytes;
  int gpu_sample_delay_ms; /* rank record gpuSampleDelayMs (absent: -1, unknown) */
  int gpu_sample_delay_auto; /* gpuSampleDelayAuto (absent: 0) */
  char periods[128];
  char windows[1024];      /* profiled windows (collprof.h), "" if never off */
  char mask_frozen[96];    /* why the event mask stopped changing, "" if it did not */
  uint64_t events_recorded, events_pxn, unterminated, blacklist_evictions,
           unknown_parent, trace_dropped, bad_calls, gpu_sampled_calls,
           gpu_samples_dropped, gpu_samples_deferred, memory_bytes;
  uint64_t events_counted;  /* rank record eventsCounted: events of calls only counted
                               (host sampling, collprof.h); absent: 0 */
  uint64_t cost_callbacks, cost_windows, cost_window_ns, cost_span_ns,
           cost_est_ns;     /* costCallbacks, costWindows, ...: callbacks timed in
                               situ (src/cost_sample.c); absent: 0 */
  int64_t cost_err_ns;      /* costErrNs: cost_est_ns's standard error; -1 unknown */
  uint64_t cost_setup_ns;   /* costSetupNs: one-off set-ups timed whole (in cost_est_ns) */
  uint64_t gpu_launches_timed, gpu_launches_unattributed, gpu_launches_skipped,
           gpu_launches_unread, gpu_launches_idle;   /* src/launch_timer.h */
  double per_event_cost_ns;
  char *command;           /* "" when unknown */
  size_t ncomms;
  cp_comm_rec *comms;
  size_t npaths;
  cp_path_rec *paths;      /* in file order (for snapshots: by local id) */
  size_t nlate;
  cp_path_rec *late;       /* paths first seen after MPI_Finalize began ("afterFinalize":
                              names only, for the trace records; in no number) */
  int has_clock;
  int64_t clock_offset_ns, clock_rtt_ns;
} cp_rank_data;

typedef struct cp_run {
  char *dir;
  size_t nranks;
  cp_rank_data *ranks;     /* sorted by rank (files without a rank: by name) */
} cp_run;

void cp_rank_data_free(cp_rank_data *r);
void cp_run_free(cp_run *run);

/* ---- layer 2: collated ---- */

/* Numbers of one path combined over ranks.  Integers only (see top).
 * Two parts, each declared once (a macro) and reachable both by field name
 * (s.calls, s.gpu_ns) and as a block (s.core, s.gpu): what every path has,
 * and the GPU numbers, which only Coll/P2p and KernelCh paths have.  The
 * summary keeps the second part apart (cp_gstat), since rank 0 holds a
 * cp_gpath per global path. */
#define CP_PCORE_MEMBERS \
  uint64_t calls, total_ns, self_ns, bytes, states, \
           unterminated,                 /* sums over ranks */ \
           untimed_calls,                /* calls without a time: total_ns, self_ns \
                                            are estimates (collprof.h) */ \
           unseen_calls;                 /* of calls, estimated (lean calls, collprof.h) */ \
  uint64_t ev_min_ns, ev_max_ns;         /* per event, over ranks with calls \
                                            (UINT64_MAX / 0 when no calls) */ \
  uint64_t tmin_ns, tmax_ns;             /* per-rank total_ns: min and max */ \
  uint32_t nranks;                       /* ranks that have the path */ \
  int32_t tmin_rank, tmax_rank;          /* world rank holding it (lowest on ties) */
#define CP_PGPU_MEMBERS \
  uint64_t gpu_ns, gpu_samples,          /* sampled GPU time, samples (collprof.h) */ \
           gpu_first_ns, gpu_first_samples,   /* of which first-call samples */ \
           gpu_est_ns, gpu_est_calls,    /* ranks' size-class estimates (merge.c) */ \
           gpu_outliers, \
           gpu_borrowed_calls,           /* of gpu_est_calls, given other classes' mean */ \
           gpu_launch_ns, gpu_launch_samples,   /* timed kernel launches (collprof.h) */ \
           gpu_launch_calls;             /* the calls their mean stands for (merge.c) */
typedef struct cp_pcore { CP_PCORE_MEMBERS } cp_pcore;
typedef struct cp_pgpu { CP_PGPU_MEMBERS } cp_pgpu;
typedef struct cp_pstat {
  union { cp_pcore core; struct { CP_PCORE_MEMBERS }; };
  union { cp_pgpu gpu; struct { CP_PGPU_MEMBERS }; };
} cp_pstat;
/* A global path's numbers in the summary: the GPU part by pointer, NULL
 * when all zero (cp_gpath_gpu, cp_gpath_pstat below). */
typedef struct cp_gstat {
  union { cp_pcore core; struct { CP_PCORE_MEMBERS }; };
  const cp_pgpu *gpu;
} cp_gstat;

/* The run counters that a rank's record (cp_rank_data), the sums over
 * ranks (cp_agg) and a snapshot (collprof_snapshot, include/collprof.h)
 * all carry under these names: copied and summed field by field
 * (pset_rank.c, snapshot.c, merge.c), so a new one is added here once. */
#define CP_RUN_COUNTERS(X)                                                                         \
  X(events_recorded) X(events_pxn) X(events_counted) X(unterminated) X(blacklist_evictions)        \
  X(unknown_parent) X(trace_dropped) X(bad_calls) X(gpu_sampled_calls) X(gpu_samples_dropped)      \
  X(gpu_samples_deferred) X(gpu_launches_timed) X(gpu_launches_unattributed) X(gpu_launches_skipped) \
  X(gpu_launches_unread) X(gpu_launches_idle)

/* Counters of the whole run (sums over ranks unless said). */
typedef struct cp_agg {
  uint64_t ranks_reported;
  uint64_t ranks_with_nccl;              /* ranks with at least one communicator */
  uint64_t events_recorded, events_pxn, unterminated, blacklist_evictions,
           unknown_parent, trace_dropped, bad_calls, gpu_sampled_calls,
           gpu_samples_dropped, gpu_samples_deferred, memory_bytes;
  uint64_t events_counted;               /* events only counted (host sampling): not in
                                            events_recorded */
  uint64_t overhead_insitu_ranks;        /* ranks whose overhead_ns is timed in situ
                                            (costNs); the others' is events x cost */
  uint64_t cost_callbacks, cost_windows, cost_window_ns, cost_span_ns;   /* those ranks' */
  double cost_err_var;                   /* those ranks' standard errors squared, summed */
  uint64_t cost_err_unknown;             /* of those ranks, the ones without one (< 2 windows) */
  uint64_t cost_setup_ns;                /* every rank's one-off set-ups, timed whole (in
                                            overhead_ns, in situ or not) */
  uint64_t gpu_launches_timed, gpu_launches_unattributed, gpu_launches_skipped, gpu_launches_unread,
           gpu_launches_idle;
  uint64_t memory_max_bytes;             /* max over ranks */
  /* The overhead's parts (summed), from which overhead_ns is settled
   * (merge.c, cp_agg_combine): the in-situ ranks' costNs, set-ups and
   * events (recorded and counted); the other ranks' (fallback) events,
   * set-ups, and recorded events x start-up per-event cost. */
  uint64_t insitu_ns, insitu_setup_ns, insitu_events;
  uint64_t fallback_ranks, fallback_events, fallback_setup_ns, fallback_startup_ns;
  uint64_t overhead_ns;                  /* the in-situ ranks' costNs, plus for the others
                                            their events (recorded and counted) x the
                                            in-situ ranks' cost per event where there are
                                            in-situ ranks with events (overhead_borrowed),
                                            else recorded events x the start-up per-event
                                            cost; plus their set-ups */
  int overhead_borrowed;                 /* 1: the fallback ranks' part is borrowed */
  int64_t start_wall_min_ns;             /* earliest start (INT64_MAX if none) */
  int64_t end_wall_max_ns;               /* latest start_wall + (end - start) */
  uint64_t runtime_max_ns;               /* longest rank (end - start) */
  int32_t runtime_max_rank;
  int32_t nccl_version;                  /* max over ranks */
  uint32_t event_mask_or;                /* OR over ranks */
  int32_t bw_nranks;                     /* communicator size for bus bandwidth:
                                            0 none, -1 ranks/comms disagree */
} cp_agg;

typedef struct cp_host_count { const char *name; uint64_t ranks; } cp_host_count;

/* Ranks lo..hi (inclusive). */
typedef struct cp_rank_range { int32_t lo, hi; } cp_rank_range;

/* One reason the event mask froze, with the ranks that gave it (a rank
 * gives at most one: the mask freezes once).  Ranges are sorted, disjoint
 * and not adjacent, so equal sets of ranks print the same. */
typedef struct cp_frozen {
  const char *reason;                    /* the rank record's maskFrozen */
  uint64_t nranks;                       /* ranks in the ranges */
  size_t nranges;
  cp_rank_range *ranges;
} cp_frozen;

/* A communicator as seen from all ranks. */
typedef struct cp_comm_sum {
  uint64_t comm_id;
  const char *name;
  int32_t nranks, nnodes;
  uint64_t members;                      /* contexts (NCCL ranks) that reported it */
  uint64_t events;                       /* summed over them */
} cp_comm_sum;

/* One log2 message-size class of a global path (src/gpu_estimate.h:
 * class k holds [2^(k-1), 2^k) bytes per call, 0 no size), summed over
 * ranks, each rank's share from its own estimate of the class (merge.c,
 * cp_size_add_rec).  All sums, so any grouping of ranks adds up alike. */
#define CP_SIZE_CLASSES 42
typedef struct cp_size_sum {
  uint64_t calls, samples, first, outliers, lent;
  uint64_t per_n, per_ns;  /* periodic samples but the outliers, their GPU ns */
  uint64_t est_ns;         /* the ranks' estimates of the class */
  uint64_t uncovered;      /* ranks with calls of it that their estimate does not
                              cover (a path without periodic sample there, or a
                              file from before per-class estimates) */
} cp_size_sum;
#define CP_SIZE_SUM_FIELDS 9
/* A global path's classes (CP_SIZE_CLASSES of them, by class). */
typedef struct cp_sized { uint64_t id; const cp_size_sum *c; } cp_sized;

/* One global path.  Kept small (rank 0 holds one per global path): what is
 * derived from the numbers is computed when printed, cp_gpath_derive, and
 * GPU numbers are held only for paths that have them. */
typedef struct cp_gpath {
  int64_t id;                            /* global id = index in cp_summary.paths */
  uint64_t hash;                         /* possibly truncated (hash_bits) */
  const char *path;
  const char *leaf_func;
  uint32_t leaf_type;
  int32_t collides;                      /* shares its hash with another path */
  cp_gstat s;
} cp_gpath;

/* A global path's GPU numbers (zeros when it has none). */
static inline const cp_pgpu *cp_gpath_gpu(const cp_gpath *p) {
  static const cp_pgpu none;
  return p->s.gpu ? p->s.gpu : &none;
}
/* A global path's numbers whole, built in *buf; returns buf. */
static inline const cp_pstat *cp_gpath_pstat(const cp_gpath *p, cp_pstat *buf) {
  buf->core = p->s.core;
  buf->gpu = *cp_gpath_gpu(p);
  return buf;
}

/* Derived from a cp_gpath's numbers (cp_gpath_derive, collate/reduce.h). */
typedef struct cp_gderived {
  double avg_ns;                         /* mean of per-rank totals over s.nranks */
  double imbalance_pct;                  /* Vftrace: signed, see collate/reduce.h */
  int32_t imbalance_rank;                /* rank of the larger deviation */
  double self_pct;                       /* self_ns / sum of all paths' self_ns */
  double call_avg_ns;                    /* total_ns / calls */
  double gpu_est_ns;                     /* Coll/P2p: collate/reduce.h;
                                            KernelCh: gpu_ns; 0 without samples */
  double gpu_call_ns;                    /* Coll/P2p: GPU time per call behind it */
  uint64_t gpu_borrowed_calls;           /* Coll/P2p estimate: calls given another size
                                            class's or the pooled mean (collate/reduce.h) */
  int gpu_exact;                         /* samples == calls (or KernelCh) */
  int gpu_first_only;                    /* Coll/P2p, not exact, every sample a first-call
                                            one: gpu_est_ns is the sampled calls' time alone
                                            (a lower bound), gpu_call_ns their mean */
  double launch_call_ns;                 /* Coll/P2p with timed launches: their mean */
  double launch_est_ns;                  /* launch_call_ns x s.gpu_launch_calls */
  int bw_valid;                          /* Coll/P2p with bytes and a known n */
  double algbw_gbs, busbw_gbs;           /* GB/s = bytes per ns */
} cp_gderived;

/* Measured by the collation itself (online: MPI tree; offline: the tool). */
typedef struct cp_collation_info {
  int online;                            /* 1 MPI tree, 0 offline tool */
  int rounds;                            /* ceil(log2 P) online */
  int nranks;
  uint64_t wall_ns;                      /* rank 0, after a barrier */
  uint64_t *bytes_sent, *bytes_recv;     /* per rank (NULL offline) */
  uint64_t max_recv_bytes;
  int32_t max_recv_rank;
  uint64_t global_set_bytes;             /* packed size of the global path set */
} cp_collation_info;

typedef struct cp_summary {
  int world_size;                        /* ranks in the job */
  cp_agg agg;
  /* rank 0's configuration (the lowest rank's offline) */
  int config_rank;
  char command[8192];
  uint32_t event_mask;
  int gpu_sample, trace_on;
  int gpu_sample_small;                  /* small calls: 1 in gpu_sample x this */
  uint64_t gpu_sample_small_bytes;       /* ...under this many bytes (0: none) */
  int gpu_sample_delay_ms;               /* start delay of GPU sampling as it ran, -1 unknown */
  int gpu_sample_delay_auto;             /* ...by the default rule (collprof.h) */
  char periods[128];
  char windows[1024];                    /* the config rank's profiled windows */
  double per_event_cost_ns;
  int hash_bits;                         /* 64 unless COLLPROF_HASH_BITS */
  char outdir[4096];
  size_t nhosts;  cp_host_count *hosts;  /* sorted by name */
  size_t ncomms;  cp_comm_sum *comms;    /* sorted by comm_id */
  size_t nfrozen; cp_frozen *frozen;     /* one per distinct reason, by lowest rank;
                                            none when no rank's mask froze */
  size_t npaths;  cp_gpath *paths;       /* by global id */
  size_t nsized;  cp_sized *sized;       /* the paths with message-size classes (Coll/P2p
                                            with GPU samples), by global id:
                                            cp_summary_sizes */
  uint64_t self_total_ns;                /* sum of self_ns over paths */
  size_t ncollisions;                    /* hashes held by more than one path */
  cp_collation_info coll;
  void *owner;                           /* internal: storage behind paths and strings
                                            (collate/pset_merge.c) */
} cp_summary;

void cp_summary_free(cp_summary *s);
/* Path id's CP_SIZE_CLASSES message-size classes, NULL for a path without. */
const cp_size_sum *cp_summary_sizes(const cp_summary *s, uint64_t id);

/* NCCL event-type bit <-> "ncclProfileColl" / short name "Coll". */
const char *cp_type_long_name(uint32_t bit);   /* "" for unknown */
const char *cp_type_short_name(uint32_t bit);  /* "" for unknown */
uint32_t cp_type_from_name(const char *name);  /* long or short name; 0 unknown */
/* The GPU sampling rule in words: "1 API call in 16, under 65536 bytes 1
 * in 64", "every API call", "off" (n: COLLPROF_GPU_SAMPLE, small and
 * small_bytes: COLLPROF_GPU_SAMPLE_SMALL and _BYTES). */
void cp_gpu_rule_text(int n, int small, uint64_t small_bytes, char *buf, size_t len);
/* "GroupApi,CollApi,..." for a mask into buf. */
void cp_mask_names(uint32_t mask, char *buf, size_t len);

/* COLLPROF_HASH_BITS (1..64, default 64), for tests that force collisions. */
int cp_hash_bits_env(void);
static inline uint64_t cp_hash_trunc(uint64_t h, int bits) {
  return bits >= 64 || bits <= 0 ? h : (h & ((UINT64_C(1) << bits) - 1));
}

#endif
