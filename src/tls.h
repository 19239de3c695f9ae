/*
 * tls.h — per-thread state of the recording core.
 *
 * Everything the hot path writes lives here, one block per thread, so two
 * threads recording different communicators share no written cache line:
 * the profile numbers per path (profile.c), the event counters, and the
 * lookup caches of the path table (paths.c) and the string table (strtab.c).
 * Each block has one writer (its thread); snapshot readers use relaxed
 * atomic loads.  Blocks are never freed: a thread that exits hands its block
 * (numbers and all) to the next new thread, so memory stays bounded by the
 * peak thread count and nothing measured is lost.
 *
 * The block is reached through one initial-exec TLS pointer (8 bytes of
 * static TLS, cheap enough for a dlopen'ed library).
 */
#ifndef COLLPROF_TLS_H
#define COLLPROF_TLS_H
#define CP_KC_SPANS 4   /* parent_link.c kc_span: parents gathered at once per thread */
#include <stddef.h>
#include <stdint.h>

#define CP_PCACHE 256   /* path-lookup cache entries (direct mapped) */
#define CP_SCACHE 64    /* string-intern cache entries (direct mapped) */
#define CP_PROF_CHUNK 256
#define CP_PROF_NCHUNK 256   /* CP_PROF_CHUNK * CP_PROF_NCHUNK = 65536 paths */

/* Per path, per thread.  Written by the owning thread with relaxed atomic
 * stores, read by snapshots with relaxed loads.  What a counted event
 * writes (calls, untimed, bytes, the size classes' pointer, states: most
 * events under host sampling) is on the entry's first cache line, with
 * the timed stop's total, self and min: a counted event finds one line
 * cold, not two (chunks are line-aligned, an entry is two lines). */
typedef struct cp_prof_ent {
  uint64_t calls, untimed;      /* untimed: of calls, those without a time (host sampling) */
  uint64_t bytes, states;
  struct cp_gcls *cls;   /* Coll/P2p: calls and GPU samples per size class
                            (gpu_estimate.h), made at the path's first bytes */
  uint64_t total, self, min;
  /* second line: the rest of a timed stop, GPU and launch samples */
  uint64_t max;
  uint64_t wextra;              /* host sampling, auto: timed events' weights beyond 1,
                                   summed; total and self hold each time times its
                                   weight (host_sample.h) */
  uint64_t gpu_ns, gpu_samples;
  uint64_t gpu_first_ns, gpu_first_samples;   /* collprof.h: first-call samples */
  uint64_t launch_ns, launch_samples;         /* Coll/P2p: launch_timer.h, periodic samples */
} cp_prof_ent;
_Static_assert(offsetof(cp_prof_ent, min) < 64 && sizeof(cp_prof_ent) == 128,
               "cp_prof_ent: a counted event's fields on the first of two lines");

/* coll_memo.h: a recorded Coll's lookups, on a line of their own */
#define CP_RMEMO 8
typedef struct cp_rmemo_ent {
  _Alignas(64) const char *func;   /* key: NCCL's strings, by address */
  const char *dt, *algo, *proto;
  uint64_t count;                  /* key */
  uint64_t bytes;                  /* count x the datatype's size */
  uint32_t parent1;                /* key: the parent's path id + 1; 0: empty */
  uint16_t path;                   /* the Coll's path id (a real one) */
  uint8_t algo_id, proto_id;       /* interned ids (under 256: what cp_erec_coll_pack holds) */
  uint32_t func_id, dt_id;         /* interned ids */
} cp_rmemo_ent;
_Static_assert(sizeof(cp_rmemo_ent) == 64, "cp_rmemo_ent: one cache line");

/* counted_memo.h: one counted start's lookup, on a line of its own */
#define CP_CMEMO_LG 6
#define CP_CMEMO (1u << CP_CMEMO_LG)
typedef struct cp_cmemo_ent {
  _Alignas(64) uint64_t pt;     /* key: parent path id << 32 | NCCL type bit; 0: empty */
  const char *func, *dt;        /* key: NCCL's strings, by address */
  uint64_t count;               /* key */
  struct cp_prof_ent *prof;
  uint64_t hbits;               /* the handle's path and counted-slot bits */
  uint64_t bytes;               /* Coll/P2p: the profile's; CollApi/P2pApi: count x size */
  uint64_t *cls_calls;          /* Coll/P2p with bytes: its size class's calls; else NULL */
} cp_cmemo_ent;
_Static_assert(sizeof(cp_cmemo_ent) == 64, "cp_cmemo_ent: one cache line");

typedef struct cp_pcache_ent { uint64_t key1; uint32_t id; uint32_t pad; } cp_pcache_ent;
/* A string-cache entry (strtab.h): NCCL's pointer, its id, and the text
 * the pointer had: in the entry itself when shorter than 16 bytes (every
 * name NCCL 2.28 passes: func, datatype, algo, proto), so that a hit reads
 * no line but this one and NCCL's string; else the interned copy's
 * address. */
typedef struct cp_scache_ent {
  const char *p;
  union { char head[16]; const char *str; } u;
  uint32_t id;
  uint32_t len;                 /* strlen of the text */
} cp_scache_ent;
_Static_assert(sizeof(cp_scache_ent) == 32, "cp_scache_ent: two a cache line");

typedef struct cp_thr {
  /* line 0: what every callback reads, the counter each counted start
   * writes, and the first profile chunk, which a counted state reads (a
   * callback finds its lines cold: pool.h says why that counts).
   * last context / pool index this thread decoded (callback_core.h): entries and
   * pools are never freed, so the pointers stay valid */
  uint64_t last_ctx;
  struct cp_pool *last_lpool;   /* this thread's pool (lane) of last_comm */
  struct cp_pool *last_pool;
  uint64_t last_hkey;           /* handle tag and last_pidx as handle bits, 0 = none */
  uint64_t counted;             /* events counted without a slot (host sampling) */
  int8_t sampled;               /* cp_mask_kernelch_on() at the last GroupApi start */
  int8_t hs_wlg;                /* host sampling, auto: log2 of the weight of this
                                   thread's timed call (host_sample.h), else 0 */
  int8_t hs_mode;               /* call_modes.h, host sampling: this thread's API call is
                                   timed (0, also where no GroupApi ever starts),
                                   recorded untimed (1) or counted only (2) */
  int8_t hs_force;              /* API calls still to time for hs_force_pe, and
                                   whether hs_ask holds a path (call_modes.h, hs_ask) */
  uint32_t lt_cur;              /* launch_timer.h: the open timed launch's slot + 1, 0 = none */
  int tid;
  uint32_t last_pidx;
  /* the profile chunks: prof[0] (paths 0-255) closes line 0 */
  cp_prof_ent *prof[CP_PROF_NCHUNK];
  struct cp_comm *last_comm;
  uint64_t events;              /* counter of recorded events (single writer, relaxed) */
  struct cp_thr *next;          /* list of all blocks (never unlinked) */
  struct cp_thr *next_free;     /* free list of blocks of exited threads */
  /* counters (single writer, relaxed) */
  uint64_t events_pxn, unknown_parent;
  /* gpu_sample_rule.c: API calls this thread saw, and those sampled (summed
   * over threads for the summary; per thread so that the hook of every API
   * call writes no shared cache line) */
  uint64_t api_calls, api_sampled;
  /* launch_timer.h: KernelLaunch starts until the next timed one, the
   * spacing chosen at the last timed one, and when that one started */
  uint32_t lt_left, lt_step;
  uint64_t lt_last_ns;
  uint32_t lt_prev;             /* the slot this thread used last + 1 (its events stay made) */
  uint32_t lt_run;              /* launches its next run is to hold (COLLPROF_LAUNCH_RUN adapts it), 0 = not yet set */
  uint32_t lt_fails;            /* runs of 2 or more in a row that were not clean (launch_timer.c, adapt) */
  uint32_t lt_hold;             /* clean single launches still due before a run is tried again */
  uint32_t lt_big;              /* this call holds an API event of COLLPROF_LAUNCH_MIN_BYTES or more
                                   (or of unknown size): its launch may be timed */
  /* call_modes.h, host sampling: position in the block of N API calls, the
   * call of the block to time, the generator that draws it */
  uint32_t hs_n, hs_pos, hs_rand;   /* hs_rand 0: not seeded yet (cp_thr_seed) */
  uint64_t seed;                /* cp_thr_seed's value, 0 until first asked */
  const struct cp_prof_ent *hs_force_pe;   /* the path hs_force times calls for */
  const struct cp_prof_ent *hs_ask;        /* a path counted without a time, to serve next */
  int8_t hs_predecided;         /* start_counted.c cp_start_group_api: this GroupApi's call
                                   is decided */
  int8_t lean;                  /* this thread's API call is lean (mask_control.c, "Lean calls") */
  int8_t hs_cls;                /* ...is only counted but not lean while lean calls are on: its
                                   counted handles carry CP_CLS_BIT (call_modes.h) */
  uint64_t lean_calls;          /* ...such calls so far (single writer, relaxed) */
  /* host sampling, auto (host_sample.h): the current block's size and its
   * log2, API calls since the last recorded one, when that one started,
   * and the running mean gap between calls */
  uint32_t hs_blk, hs_lg, hs_calls;
  uint64_t hs_last_ns, hs_gap;
  uint32_t hs_epoch;            /* cp_hot.off_epoch when hs_last_ns was taken */
  /* gpu_sample_rule.c, GPU sampling spaced in time (COLLPROF_GPU_SAMPLE_US):
   * the current block of API calls (its size, the call to sample, the
   * calls seen), when it began and in which off_epoch, and the running
   * mean time per call */
  uint32_t gs_blk, gs_pos, gs_i, gs_epoch;
  uint64_t gs_t0, gs_pace;
  /* gpu_sample_rule.c, blocks of N: where each stream of decisions stands in
   * its block (one stream, or, with small calls sampled less
   * (COLLPROF_GPU_SAMPLE_SMALL), small calls' and the others'; j counts a
   * stream's decisions), so that a decision divides only when a block
   * begins */
  struct cp_gs_stream {
    uint64_t j, b;              /* the last decision's number and block */
    uint64_t i, pos;            /* its place in the block, the block's sample */
  } gs_one, gs_small, gs_large;
  /* start_common.h api_bytes: the last API call's datatype string and its size */
  const char *api_dt;
  uint32_t api_dt_size;
  /* Coll/P2p GPU spans dropped by the slot-reuse check (parent_link.h) */
  uint64_t gpu_dropped;
  /* callback_core.h remote_pool: the other pool a parent handle named last (a
   * KernelCh's Coll in the application thread's lane, for NCCL's proxy
   * thread), and its comm index | lane << CP_COMM_BITS */
  struct cp_pool *rp_pool;
  uint32_t rp_pidx;
  /* kc_batch.h: this thread's KernelCh under one parent in another
   * thread's pool, their stops gathered into one post */
  struct cp_kc_batch {
    struct cp_pool *pool;       /* the parent's pool; NULL: no batch open */
    uint32_t idx, gen;          /* the parent: local slot index, whole generation */
    uint32_t live;              /* children started into the batch, not yet stopped */
    uint32_t nref, nkch;        /* what the stopped ones gave: references, GPU spans */
    uint32_t bad;               /* a span failed the slot-reuse check */
    uint64_t dur, gs, ge;
  } kcb;
  /* parent_link.c kc_span (CP_KC_SPANS parents at once): Coll/P2p spans
   * gathered from this thread's KernelCh
   * under another thread's parent that holds no hold (kc_n), accounted
   * here when all kc_n channels stopped */
  struct cp_kc_span {
    struct cp_pool *pool;       /* NULL: free */
    uint32_t idx, gen, path, kc_n, started, stopped, nkch, bad, first, kc_epoch, age;
    uint64_t kc_seq, bytes, gs, ge;
  } kcs[CP_KC_SPANS];
  uint32_t kcs_last;            /* the entry found or opened last: looked at first */
  cp_pcache_ent pcache[CP_PCACHE];
  cp_scache_ent scache[CP_SCACHE];
  cp_cmemo_ent cmemo[CP_CMEMO];
  cp_cmemo_ent lmemo;           /* start_counted.c lean_derive: the last lean call's Coll/P2p,
                                   keyed by its CollApi/P2pApi (counted_memo.h) */
  cp_rmemo_ent rmemo[CP_RMEMO]; /* coll_memo.h */
  /* cost_sample.c: this thread's callbacks timed in cost windows, and
   * their time (single writer, relaxed; written only in windows) */
  uint64_t cost_n, cost_ns;
} cp_thr;
_Static_assert(offsetof(cp_thr, last_pidx) < 56 && offsetof(cp_thr, prof) == 56, "cp_thr: line 0 as laid out");

/* The thread-local words a callback reads, in one cache line of their own.
 * Why one struct: as separate __thread variables of several files they
 * landed wherever the linker put them, two lines apart at times, and a
 * callback that finds its lines cold (NCCL's own work evicts them between
 * two callbacks) paid a miss for each line (test/bench/lines_per_event.sh). */
typedef struct cp_tls_hot {
  cp_thr *thr;                  /* this thread's block (cp_thr_get) */
  /* Non-zero while this thread applies recorded callbacks (proxy_defer.c):
   * the host time the core takes for "now" instead of reading the clock. */
  uint64_t replay_ns;
  /* Non-zero while a recorded KernelCh stop is applied: 1 + its parent
   * pool's kc_ops when NCCL made the stop (parent_link.h, kc_untrusted; the 1
   * since kc_ops is 0 until its first batch is published). */
  uint64_t replay_kc_ops;
  struct cp_ring *ring;         /* trace_ring.h: this thread's trace ring */
  struct cp_dq *dq;             /* proxy_defer.c: this thread's deferral ring */
  int dq_none;                  /* proxy_defer.c: no deferral ring to be had */
  int oneoff_depth;             /* oneoff.h: set-ups open on this thread */
  uint64_t oneoff_ns;           /* oneoff.h: this thread's set-up time so far */
} cp_tls_hot_t;
extern __thread cp_tls_hot_t cp_tls_hot __attribute__((tls_model("initial-exec"), aligned(64)));
_Static_assert(sizeof(cp_tls_hot_t) <= 64, "cp_tls_hot: one cache line");
#define cp_tls_thr (cp_tls_hot.thr)
#define cp_replay_ns (cp_tls_hot.replay_ns)
#define cp_replay_kc_ops (cp_tls_hot.replay_kc_ops)

cp_thr *cp_thr_slow(void);
/* Blocks made ahead, at a communicator's init (plugin.c), for `threads`
 * threads in all: free ones are made until those of live threads plus the
 * free ones reach it (at most 16 free), so that a thread's first callback
 * (NCCL's proxy thread's) takes one instead of allocating and touching a
 * block there. */
void cp_thr_prepare(unsigned threads);
/* The block every thread shares when a block of its own could not be
 * allocated: its numbers stay atomic, but what a thread keeps for itself
 * alone (counted_memo.h) must not be used there. */
extern cp_thr cp_thr_emergency;
static inline cp_thr *cp_thr_get(void) {
  cp_thr *t = cp_tls_thr;
  if (__builtin_expect(t != 0, 1)) return t;
  return cp_thr_slow();
}

/* Run as a thread ends, on that thread, before its block goes back to
 * the free list for the next new thread (NULL: nothing to run).  Set once,
 * at the first init (parent_link.c: what the thread's kc_span table still holds
 * is accounted, not lost, and not handed on to the next thread). */
extern void (*cp_thr_exit_hook)(cp_thr *t);

/* Zeroed memory on its own cache lines (nothing else shares a line the hot
 * path writes): size rounded up to 64.  NULL on failure. */
void *cp_calloc_lines(size_t size);

/* Head of the list of every block (acquire load; follow ->next). */
cp_thr *cp_thr_all(void);

/* The seed of this thread's sampling draws (call_modes.h's host-sampling
 * positions, gpu_sample_rule.c's spaced GPU samples), never 0, fixed at the
 * thread's first draw.  By default from the thread id (unique on a host,
 * read without a system call), so that threads and ranks draw differently.  With COLLPROF_SAMPLE_SEED=S, from S and the
 * thread's place among the threads that drew before it: a deterministic
 * program (a replayed capture, a fixed loop) then has the same calls
 * sampled in every run, and every rank of a job draws alike, so that with
 * a fixed N the same calls are timed on every rank (test/lean.t; auto
 * sizes its blocks by each rank's pace).  Called by the owning thread
 * only. */
uint64_t cp_thr_seed(cp_thr *t);
/* Relaxed single-writer increment helpers. */
static inline void cp_inc(uint64_t *p, uint64_t v) {
  __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + v, __ATOMIC_RELAXED);
}
static inline uint64_t cp_ld(const uint64_t *p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

/* Kernel thread id of the caller (cached, refreshed after fork). */
static inline int cp_gettid(void) { return cp_thr_get()->tid; }
/* Called in the child after fork. */
void cp_thr_after_fork(void);
/* Bytes held by thread blocks and their profile chunks. */
uint64_t cp_thr_memory(void);

#endif
