/*
 * snapshot.c — collprof_snapshot_take/free and collprof_now_ns: a
 * consistent copy of everything the core measured, for the output code
 * and the MPI layer (collprof.h).
 *
 * Per-thread profile arrays are summed (profile.c); each pool is scanned
 * under its lock for live slots (unterminated events) and for GPU spans
 * still pending in slots (accounted here read-only, so taking a snapshot
 * twice changes nothing).  Strings point into tables that are never freed.
 * Once MPI_Finalize has begun, the first snapshot is kept and later ones
 * are its copies: the run ends there (below, before collprof_snapshot_take).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "collprof.h"
#pragma GCC visibility push(hidden)
#include "clock.h"
#include "cost_sample.h"
#include "output.h"
#include "config.h"
#include "handle.h"
#include "host_sample.h"
#include "launch_timer.h"
#include "lean_estimate.h"
#include "mask_control.h"
#include "output_hooks.h"
#include "paths.h"
#include "plugin.h"
#include "pool.h"
#include "pool_owner.h"
#include "profile.h"
#include "proxy_defer.h"
#include "registry.h"
#include "strtab.h"
#include "tls.h"
#include "trace.h"

#define CP_EXPORT __attribute__((visibility("default")))

typedef struct scan {
  collprof_path_stat *paths;
  cp_gcls **cls;            /* per path, NULL without size classes */
  size_t n;
  uint64_t unterminated;
} scan;

static void scan_slot(const cp_slot *s, void *arg) {
  scan *sc = arg;
  if (s->path >= sc->n) return;
  collprof_path_stat *p = &sc->paths[s->path];
  if (s->live) { p->unterminated++; sc->unterminated++; }
  if (s->span_n && !s->span_bad && s->span_max >= s->span_min) {   /* not yet flushed (pool.c) */
    const uint64_t span = s->span_max - s->span_min;
    p->gpu_ns += span;
    p->gpu_samples++;
    if (s->span_first) { p->gpu_first_ns += span; p->gpu_first_samples++; }
    if (sc->cls && !sc->cls[s->path]) sc->cls[s->path] = calloc(1, sizeof(cp_gcls));
    if (sc->cls && sc->cls[s->path]) cp_gcls_add_sample(sc->cls[s->path], s->bytes, span, s->span_first);
  }
}

/* A path's GPU estimate from its size classes (g: NULL if it has none),
 * which the path keeps (gpu_classes) when it is a sampled Coll/P2p. */
/* Host sampling (call_modes.h): a path with untimed calls gets the estimate of
 * all its calls' time, the timed events' weighted mean times the calls
 * (host_sample.h); none timed (possible only for a path first seen in the
 * last calls of the run): 0. */
static void scale_untimed(collprof_path_stat *p) {
  if (!p->untimed_calls && !p->timed_weight_extra) return;
  const uint64_t timed = p->calls - p->untimed_calls, wx = p->timed_weight_extra;
  p->total_ns = cp_hs_estimate(p->total_ns, p->calls, timed, wx);
  p->self_ns = cp_hs_estimate(p->self_ns, p->calls, timed, wx);
}

/* Lean calls (mask_control.c, "Lean calls"): NCCL sent only the API
 * events of such a call, and start_counted.c counted its Coll/P2p from them
 * (cp_gcls_ent lean), so calls stay exact down to Coll/P2p.  The types
 * below are seen only in the calls that were not lean, and their counts
 * are estimated from those.  ProxyOp, ProxyStep and NetPlugin under a
 * Coll/P2p: per size class of their call (lean_estimate.h).  Otherwise
 * one ratio: the path's counts scaled by its anchor's calls over the
 * anchor's calls that were not lean -- the GroupApi root (this process's
 * lean calls, counted at their GroupApi) for KernelLaunch and Group, whose
 * number per call does not depend on its size; for a proxy path whose
 * Coll/P2p has no call seen (cp_lean_estimate), that Coll/P2p; for a
 * proxy event with no Coll/P2p above it (PXN: its call was another
 * process's, whose lean calls were decided there) all this process's
 * Coll/P2p together, as the nearest stand-in for its peers' in a job
 * whose ranks run the same loop.
 * KernelCh are GPU samples, taken in calls that are never lean: left as
 * they are. */
static void scale_to(collprof_path_stat *p, uint64_t est) {
  if (!p->calls || est <= p->calls) return;
  const uint64_t extra = est - p->calls;
  p->states = (uint64_t)(((unsigned __int128)p->states * est + p->calls / 2) / p->calls);
  p->unseen_calls = extra;
  p->untimed_calls += extra;
  p->calls = est;
}
static void scale_by(collprof_path_stat *p, uint64_t all, uint64_t seen) {
  if (!p->calls || seen == 0 || seen >= all) return;
  scale_to(p, (uint64_t)(((unsigned __int128)p->calls * all + seen / 2) / seen));
}
static void scale_unseen(collprof_path_stat *paths, size_t n, cp_gcls **cls) {
  uint64_t lean = 0, groups = 0, colls = 0, colls_lean = 0;
  for (cp_thr *t = cp_thr_all(); t; t = t->next) lean += cp_ld(&t->lean_calls);
  if (!lean) return;
  for (size_t i = 0; i < n; i++) {
    if (paths[i].leaf_type == ncclProfileGroupApi && cp_path_parent((uint32_t)i) == CP_PATH_NONE)
      groups += paths[i].calls;
    if ((paths[i].leaf_type & (ncclProfileColl | ncclProfileP2p)) && cls && cls[i]) {
      colls += paths[i].calls;
      colls_lean += cp_gcls_lean(cls[i]);
    }
  }
  for (size_t i = 0; i < n; i++) {
    collprof_path_stat *p = &paths[i];
    const uint32_t ty = p->leaf_type;
    if (ty == ncclProfileKernelLaunch || ty == ncclProfileGroup) {
      scale_by(p, groups, groups > lean ? groups - lean : 0);
    } else if (ty & (ncclProfileProxyOp | ncclProfileProxyStep | ncclProfileNetPlugin)) {
      uint32_t a = cp_path_parent((uint32_t)i);
      while (a < n && !(paths[a].leaf_type & (ncclProfileColl | ncclProfileP2p))) a = cp_path_parent(a);
      if (a == CP_PATH_PXN) {
        scale_by(p, colls, colls > colls_lean ? colls - colls_lean : 0);
        continue;
      }
      if (a >= n || !cls || !cls[a]) continue;
      uint64_t est;
      if (cls[i] && cp_lean_estimate(cls[a], cls[i], p->calls, &est)) {
        scale_to(p, est);
        continue;
      }
      const uint64_t al = cp_gcls_lean(cls[a]), all = paths[a].calls;
      scale_by(p, all, all > al ? all - al : 0);
    }
  }
}

static void path_estimate(collprof_path_stat *p, cp_gcls *g) {
  /* a Coll/P2p's table, filled once for both uses below (a proxy path's
   * table counts events, not calls: left as it is) */
  const int op = (p->leaf_type & (ncclProfileColl | ncclProfileP2p)) != 0;
  if (g && op) cp_gcls_fill_unsized(g, p->calls);
  /* the calls a timed launch's mean stands for (launch_timer.h: only calls
   * of COLLPROF_LAUNCH_MIN_BYTES or more are timed); without a table, all */
  if (op) p->gpu_launch_calls = g ? cp_gcls_calls_from(g, cp_lt_min_bytes) : p->calls;
  if (g && op && p->gpu_samples) {   /* (KernelCh paths have samples, no estimate) */
    cp_gpu_estimate(g, &p->gpu_est_ns, &p->gpu_est_calls, &p->gpu_outliers, &p->gpu_borrowed_calls);
    p->gpu_classes = g;   /* freed with the snapshot */
    return;
  }
  free(g);
  /* no table: first-call samples once, the collator's pooled mean for the rest */
  p->gpu_est_ns = p->gpu_first_ns; p->gpu_est_calls = p->gpu_first_samples;
}

/* One exclusive access per pool (each costs a membarrier): its slots and
 * counters, and for a communicator's lane (ci) its events and GPU clock
 * offset (the least of the lanes'). */
static void scan_pool(cp_pool *p, scan *sc, uint64_t *evictions, uint64_t *memory, collprof_comm_info *ci) {
  if (!p) return;
  cp_pool_excl_lock(p);   /* its owner may be recording (pool_owner.h) */
  cp_pool_drain(p);
  if (ci) {
    ci->events += p->events;
    if (p->gpu_off_valid && (!ci->gpu_offset_valid || p->gpu_off < ci->gpu_offset_ns)) {
      ci->gpu_offset_ns = p->gpu_off;
      ci->gpu_offset_valid = 1;
    }
  }
  cp_pool_foreach(p, scan_slot, sc);
  for (uint32_t i = 0; i < p->nunterm; i++) {   /* live when its chunks were released */
    if (p->unterm[i].path < sc->n) sc->paths[p->unterm[i].path].unterminated += p->unterm[i].n;
    sc->unterminated += p->unterm[i].n;
  }
  *evictions += p->evictions;
  *memory += p->memory;
  if (__atomic_load_n(&p->inbox, __ATOMIC_ACQUIRE)) *memory += CP_INBOX * sizeof(cp_post);
  cp_pool_excl_unlock(p);
}

/* The end of the run.  Once the MPI layer manages the run (MPI_Finalize has
 * begun) it is frozen at the first snapshot, so the rank file written before
 * collation, the one rewritten with global ids after it, and the online
 * summary all carry the same end time: offline and online collation then
 * agree number for number. */
static uint64_t run_end_ns(void) {
  static _Atomic uint64_t frozen;
  if (!cp_output_mpi_managed()) return cp_clock_now();
  uint64_t f = atomic_load(&frozen);
  if (f) return f;
  uint64_t now = cp_clock_now(), zero = 0;
  return atomic_compare_exchange_strong(&frozen, &zero, now) ? now : zero;
}

/* What names path i: its id, hash, string and leaf. */
static void path_identity(collprof_path_stat *p, uint32_t i) {
  p->local_id = i;
  p->hash = cp_path_hash(i);
  p->path = cp_path_str(i);
  p->leaf_type = cp_path_type(i);
  p->leaf_func = cp_str_get(cp_path_func(i));
}

/* Everything the core measured, now. */
static int take_live(collprof_snapshot *out) {
  cp_defer_flush();   /* recorded proxy-thread callbacks count */
  memset(out, 0, sizeof *out);
  const cp_config *cfg = cp_config_get();
  out->pid = (int)getpid();
  if (gethostname(out->host, sizeof out->host - 1) != 0) strcpy(out->host, "unknown");
  out->world_rank = -1;
  out->world_size = 0;
  if (cp_output_get_identity) cp_output_get_identity(&out->world_rank, &out->world_size);
  out->start_mono_ns = cp_clock_start_mono();
  out->end_mono_ns = run_end_ns();
  /* ...and so do the cost windows (cost_sample.c): a window that opened
   * after the online summary was made would change the rank record written
   * after it (with global ids, or at exit), and the offline collation would
   * then disagree with the online one (a fuzzed 3-rank run: 14 windows
   * against 15). */
  if (cp_output_mpi_managed()) cp_cost_shutdown();
  out->start_wall_ns = cp_clock_start_wall();
  out->event_mask = cfg->event_mask;
  out->gpu_sample = cfg->gpu_sample;
  out->gpu_sample_small = (int)cfg->gpu_sample_small;
  out->gpu_sample_small_bytes = cfg->gpu_sample_small_bytes;
  out->gpu_sample_delay_ms = cp_mask_start_delay_ms();
  out->gpu_sample_delay_auto = cfg->gpu_sample_delay_auto;
  out->trace_on = cfg->trace_on;
  out->nccl_version = cp_core_nccl_version();
  snprintf(out->periods, sizeof out->periods, "%s", cfg->periods);
  _Static_assert(sizeof out->windows >= CP_WINDOWS_TEXT, "the windows text fits the snapshot whole");
  snprintf(out->windows, sizeof out->windows, "%s", cp_mask_windows());
  out->per_event_cost_ns = cp_core_event_cost();
  cp_cost_stats cs;
  cp_cost_read(&cs);
  out->cost_callbacks = cs.callbacks;
  out->cost_timed_ns = cs.timed_ns;
  out->cost_windows = cs.windows;
  out->cost_window_ns = cs.window_ns;
  out->cost_span_ns = cs.span_ns;
  out->cost_slow_ns = cs.slow_ns;
  out->cost_err_ns = cs.err_known ? (int64_t)(cs.err_ns > INT64_MAX ? INT64_MAX : cs.err_ns) : -1;
  out->cost_est_ns = cs.est_ns;
  out->cost_dense_span_ns = cs.dense.span_ns;
  out->cost_dense_windows = cs.dense.windows;
  out->cost_dense_window_ns = cs.dense.window_ns;
  out->cost_dense_timed_ns = cs.dense.timed_ns;
  out->cost_dense_callbacks = cs.dense.callbacks;
  out->cost_dense_slow_ns = cs.dense_slow_ns;
  out->cost_dense_est_ns = cs.dense_est_ns;
  out->cost_setup_ns = cs.setup_ns;

  size_t n = cp_path_count();
  out->paths = calloc(n ? n : 1, sizeof *out->paths);
  if (!out->paths) return -1;
  out->npaths = n;
  for (size_t i = 0; i < n; i++) path_identity(&out->paths[i], (uint32_t)i);
  cp_gcls **cls = calloc(n ? n : 1, sizeof *cls);   /* NULL: no estimate, collator pools */
  cp_profile_merge(out->paths, n, cls);

  scan sc = {out->paths, cls, n, 0};
  uint64_t memory = cp_path_memory() + cp_str_memory() + cp_thr_memory() + cp_pool_cache_bytes();
  uint32_t nc = cp_registry_count();
  out->comms = calloc(nc ? nc : 1, sizeof *out->comms);
  if (!out->comms) {
    for (size_t i = 0; i < n; i++) free(cls ? cls[i] : NULL);
    free(cls); free(out->paths); out->paths = NULL; return -1;
  }
  out->ncomms = nc;
  for (uint32_t i = 1; i <= nc; i++) {
    const cp_comm *c = cp_registry_get(i);
    collprof_comm_info *ci = &out->comms[i - 1];
    if (!c) continue;
    ci->comm_id = c->comm_id;
    memcpy(ci->comm_name, c->comm_name, sizeof ci->comm_name);
    ci->nranks = c->nranks;
    ci->nnodes = c->nnodes;
    ci->nccl_rank = c->nccl_rank;
    memcpy(ci->gpu_uuid, c->gpu_uuid, sizeof ci->gpu_uuid);
    ci->finalized = __atomic_load_n(&c->finalized, __ATOMIC_RELAXED);
    memory += sizeof *c;
    /* its lanes (one pool per calling thread, registry.h): events summed,
     * the GPU clock offset the least of theirs */
    for (uint32_t l = 0; l < CP_LANES; l++)
      scan_pool(cp_registry_lane(i, l), &sc, &out->blacklist_evictions, &memory, ci);
  }
  scan_pool(cp_core_pool_for(0, 0), &sc, &out->blacklist_evictions, &memory, NULL);
  scale_unseen(out->paths, n, cls);
  for (size_t i = 0; i < n; i++) {
    collprof_path_stat *p = &out->paths[i];
    if (p->calls == p->untimed_calls) p->min_ns = p->max_ns = 0;
    scale_untimed(p);
    path_estimate(p, cls ? cls[i] : NULL);
  }
  free(cls);

  for (cp_thr *t = cp_thr_all(); t; t = t->next) {
    out->events_recorded += cp_ld(&t->events);
    out->events_pxn += cp_ld(&t->events_pxn);
    out->events_counted += cp_ld(&t->counted);
    out->unknown_parent += cp_ld(&t->unknown_parent);
  }
  out->unterminated = sc.unterminated;
  out->trace_dropped = cp_trace_dropped();
  out->bad_calls = cp_core_bad_calls();
  out->gpu_sampled_calls = cp_mask_sampled_calls();
  out->gpu_samples_deferred = cp_mask_samples_deferred();
  cp_lt_counts lt;
  cp_lt_get_counts(&lt);
  out->gpu_launches_timed = lt.timed;
  out->gpu_launches_unattributed = lt.unattributed;
  out->gpu_launches_skipped = lt.skipped;
  out->gpu_launches_unread = lt.unread;
  out->gpu_launches_idle = lt.idle;
  for (cp_thr *t = cp_thr_all(); t; t = t->next) out->gpu_samples_dropped += cp_ld(&t->gpu_dropped);
  snprintf(out->mask_frozen, sizeof out->mask_frozen, "%s", cp_mask_frozen_text());
  out->memory_bytes = memory + cp_trace_memory_bytes();
  return 0;
}

/* The run's numbers end where its time ends.  Once the MPI layer manages
 * the run (MPI_Finalize has begun), the first snapshot is kept and every
 * later one is a copy of it: the rank file written before the collation,
 * the one rewritten with global ids after it, the one rewritten at exit
 * and the online summary then carry the same numbers, however many
 * callbacks NCCL's threads still make meanwhile (a watchdog thread, a
 * communicator destroyed after MPI_Finalize, a proxy thread's last
 * stops).  Before, each took its own and they disagreed: the fuzz with
 * MPI_Finalize called while its threads went on (COLLPROF_FUZZ_SHUTDOWN=
 * mpi) had reductions, counters and the offline collation differ from the
 * summary.  Later events still reach the trace; cp_snapshot_events_after_end
 * counts them for the line at exit. */
static pthread_mutex_t g_kept_mu = PTHREAD_MUTEX_INITIALIZER;
static collprof_snapshot g_kept;   /* under g_kept_mu */
static int g_have_kept;

static uint64_t events_now(void) {
  uint64_t n = 0;
  for (cp_thr *t = cp_thr_all(); t; t = t->next) n += cp_ld(&t->events) + cp_ld(&t->counted);
  return n;
}

/* A deep copy (the size-class tables are the only owned parts); 0 on
 * success, else dst is empty. */
static int snapshot_copy(collprof_snapshot *dst, const collprof_snapshot *src) {
  *dst = *src;
  dst->paths = calloc(src->npaths ? src->npaths : 1, sizeof *dst->paths);
  dst->comms = calloc(src->ncomms ? src->ncomms : 1, sizeof *dst->comms);
  int ok = dst->paths && dst->comms;
  if (ok) {
    memcpy(dst->paths, src->paths, src->npaths * sizeof *dst->paths);
    memcpy(dst->comms, src->comms, src->ncomms * sizeof *dst->comms);
    for (size_t i = 0; i < src->npaths; i++) {
      if (!src->paths[i].gpu_classes) continue;
      cp_gcls *g = malloc(sizeof *g);
      if (g) memcpy(g, src->paths[i].gpu_classes, sizeof *g);
      else ok = 0;
      dst->paths[i].gpu_classes = g;
    }
  }
  if (!ok) {
    collprof_snapshot_free(dst);
    memset(dst, 0, sizeof *dst);
    return -1;
  }
  return 0;
}

CP_EXPORT int collprof_snapshot_take(collprof_snapshot *out) {
  if (!out) return -1;
  if (!cp_output_mpi_managed()) return take_live(out);
  pthread_mutex_lock(&g_kept_mu);
  int rc = 0;
  if (!g_have_kept) {
    rc = take_live(&g_kept);
    if (rc == 0) g_have_kept = 1;
    else { collprof_snapshot_free(&g_kept); memset(&g_kept, 0, sizeof g_kept); }
  }
  if (rc == 0) rc = snapshot_copy(out, &g_kept);
  pthread_mutex_unlock(&g_kept_mu);
  if (rc) memset(out, 0, sizeof *out);
  return rc;
}

uint64_t cp_snapshot_events_after_end(void) {
  pthread_mutex_lock(&g_kept_mu);
  const int have = g_have_kept;
  const uint64_t then = g_kept.events_recorded + g_kept.events_counted;
  pthread_mutex_unlock(&g_kept_mu);
  const uint64_t now = have ? events_now() : 0;
  return now > then ? now - then : 0;
}

size_t cp_snapshot_paths_after_end(collprof_path_stat **out) {
  *out = NULL;
  pthread_mutex_lock(&g_kept_mu);
  const size_t from = g_have_kept ? g_kept.npaths : 0;
  const int have = g_have_kept;
  pthread_mutex_unlock(&g_kept_mu);
  const size_t n = cp_path_count();
  if (!have || n <= from) return 0;
  collprof_path_stat *p = calloc(n - from, sizeof *p);
  if (!p) return 0;
  for (size_t i = from; i < n; i++) path_identity(&p[i - from], (uint32_t)i);
  *out = p;
  return n - from;
}

_Static_assert(COLLPROF_SIZE_CLASSES == CP_GCLS, "collprof.h's bound on size classes is gpu_estimate.h's");

CP_EXPORT size_t collprof_path_size_classes(const collprof_path_stat *p, collprof_size_class *out) {
  const cp_gcls *g = p ? p->gpu_classes : NULL;
  if (!g || !out) return 0;
  cp_gcls_est est[CP_GCLS];
  cp_gpu_estimate_classes(g, est);
  size_t n = 0;
  for (unsigned k = 0; k < CP_GCLS; k++) {
    const cp_gcls_ent *e = &g->c[k];
    if (!e->calls && !e->samples) continue;
    /* a first-call part larger than its whole counts as periodic, as in
     * the estimate (gpu_estimate.c), so every reader sees one table */
    const int first_ok = e->first_samples <= e->samples && e->first_ns <= e->ns;
    out[n++] = (collprof_size_class){k ? 1ull << (k - 1) : 0, e->calls, e->samples,
                                     first_ok ? e->first_samples : 0, e->ns, first_ok ? e->first_ns : 0,
                                     e->max_ns, est[k].ns, est[k].calls, est[k].outliers, est[k].outlier_ns,
                                     est[k].lent};
  }
  return n;
}

CP_EXPORT void collprof_snapshot_free(collprof_snapshot *s) {
  if (!s) return;
  for (size_t i = 0; s->paths && i < s->npaths; i++) free(s->paths[i].gpu_classes);
  free(s->paths);
  free(s->comms);
  s->paths = NULL;
  s->comms = NULL;
  s->npaths = s->ncomms = 0;
}

CP_EXPORT uint64_t collprof_now_ns(void) { return cp_clock_now(); }
