/*
 * local_write.c — the public output functions of include/collprof.h:
 * identity, clock offset, output folder, the tail of the rank file (path
 * records, rank summary, clock record; formats in /work/brief.md), the
 * global-id rewrite, shutdown, and the exit-time / last-finalize writers.
 *
 * The tail is handed to the trace writer as one block (cp_trace_set_tail),
 * which keeps it last in the file: records that arrive later are written
 * before a copy of it.  collprof_write_local is idempotent: it rewrites the
 * tail only when something changed since the last one (records written,
 * events recorded, clock offset, global ids), and then with the global ids
 * if collation already handed them over, so a late rewrite never loses
 * them.  Not a hot path: formatting uses snprintf into a growing buffer.
 */
#include "collprof.h"
#include "capture.h"
#include "config.h"
#include "cost_sample.h"
#include "gpu_estimate.h"
#include "launch_timer.h"
#include "json_escape.h"
#include "proxy_defer.h"
#include "mask_control.h"
#include "meta.h"
#include "output.h"
#include "output_hooks.h"
#include "trace.h"
#include "trace_json.h"
#include "trace_writer.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Referenced weakly so that tests linking the output code alone need not
 * pull in the whole recording core. */
extern void cp_plugin_stop(void) __attribute__((weak));

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static int g_tail_done;             /* a tail is in the file */
static uint64_t g_tail_lines, g_tail_events;
static int g_tail_clock;            /* clock generation in that tail */
static int g_tail_global;           /* that tail had global ids */
static int64_t *g_gids;             /* from collprof_write_global */
static size_t g_ngids;
static int g_have_gids;
static int g_clock_gen;
static int64_t g_clock_off, g_clock_rtt;

/* ---- a growing text buffer ---- */
typedef struct sbuf { char *p; size_t len, cap; int oom; } sbuf;

static int sb_room(sbuf *b, size_t n) {
  if (b->oom) return 0;
  if (b->len + n + 1 <= b->cap) return 1;
  size_t nc = b->cap ? b->cap : 4096;
  while (nc < b->len + n + 1) nc *= 2;
  char *q = realloc(b->p, nc);
  if (!q) { b->oom = 1; return 0; }
  b->p = q;
  b->cap = nc;
  return 1;
}

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || !sb_room(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

/* A quoted, escaped JSON string. */
static void sb_str(sbuf *b, const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (!sb_room(b, CP_JSON_ESCAPE_MAX(n) + 2)) return;
  b->p[b->len++] = '"';
  b->len += cp_json_escape(b->p + b->len, CP_JSON_ESCAPE_MAX(n), s ? s : "", n);
  b->p[b->len++] = '"';
}

static void sb_us3(sbuf *b, uint64_t ns) {
  sb_printf(b, "%llu.%03u", (unsigned long long)(ns / 1000), (unsigned)(ns % 1000));
}

/* ---- the tail ---- */

/* "gpuSizes": per size class with calls or samples, [smallest bytes,
 * calls, samples, first-call samples, GPU ns, first-call ns, longest
 * periodic sample ns, then the rank's estimate of the class: GPU ns, the
 * calls it covers, outliers, their ns, calls given a neighbour's mean]
 * (gpu_estimate.h; the table is filled, class 0 included, by the
 * snapshot) */
static void gpu_sizes(sbuf *b, const collprof_path_stat *p) {
  collprof_size_class c[COLLPROF_SIZE_CLASSES];
  const size_t n = collprof_path_size_classes(p, c);
  sb_printf(b, ",\"gpuSizes\":[");
  for (size_t i = 0; i < n; i++) {
    const collprof_size_class *e = &c[i];
    sb_printf(b, "%s[%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu]", i ? "," : "",
              (unsigned long long)e->lo, (unsigned long long)e->calls, (unsigned long long)e->samples,
              (unsigned long long)e->first_samples, (unsigned long long)e->ns, (unsigned long long)e->first_ns,
              (unsigned long long)e->max_ns, (unsigned long long)e->est_ns, (unsigned long long)e->est_calls,
              (unsigned long long)e->outliers, (unsigned long long)e->outlier_ns, (unsigned long long)e->lent);
  }
  sb_printf(b, "]");
}

/* A path record's opening: what names the path (gid < 0: "id":null). */
static void path_head(sbuf *b, const collprof_path_stat *p, int64_t gid) {
  sb_printf(b, "{\"recordType\":\"path\",\"id\":");
  if (gid >= 0) sb_printf(b, "%lld", (long long)gid);
  else sb_printf(b, "null");
  sb_printf(b, ",\"local\":%u,\"hash\":\"0x%016llx\",\"path\":", p->local_id, (unsigned long long)p->hash);
  sb_str(b, p->path);
  sb_printf(b, ",\"leafType\":\"%s\",\"leafFunc\":", cp_type_name(p->leaf_type));
  sb_str(b, p->leaf_func);
}

static void path_records(sbuf *b, const collprof_snapshot *s, const int64_t *gids, size_t ng) {
  for (size_t i = 0; i < s->npaths; i++) {
    const collprof_path_stat *p = &s->paths[i];
    if (!p->path) continue;
    path_head(b, p, gids && p->local_id < ng ? gids[p->local_id] : -1);
    sb_printf(b,
              ",\"calls\":%llu,\"total_ns\":%llu,\"self_ns\":%llu,\"min_ns\":%llu,\"max_ns\":%llu,"
              "\"bytes\":%llu,\"states\":%llu,\"gpu_ns\":%llu,\"gpu_samples\":%llu,"
              "\"gpu_first_ns\":%llu,\"gpu_first_samples\":%llu,\"unterminated\":%llu",
              (unsigned long long)p->calls, (unsigned long long)p->total_ns,
              (unsigned long long)p->self_ns, (unsigned long long)p->min_ns,
              (unsigned long long)p->max_ns, (unsigned long long)p->bytes,
              (unsigned long long)p->states, (unsigned long long)p->gpu_ns,
              (unsigned long long)p->gpu_samples, (unsigned long long)p->gpu_first_ns,
              (unsigned long long)p->gpu_first_samples, (unsigned long long)p->unterminated);
    if (p->gpu_samples && p->leaf_type != 64)   /* Coll/P2p: the size-class estimate */
      sb_printf(b, ",\"gpu_est_ns\":%llu,\"gpu_est_calls\":%llu,\"gpu_outliers\":%llu",
                (unsigned long long)p->gpu_est_ns, (unsigned long long)p->gpu_est_calls,
                (unsigned long long)p->gpu_outliers);
    if (p->gpu_borrowed_calls)   /* of gpu_est_calls: given other size classes' mean */
      sb_printf(b, ",\"gpu_borrowed_calls\":%llu", (unsigned long long)p->gpu_borrowed_calls);
    if (p->gpu_classes) gpu_sizes(b, p);
    if (p->untimed_calls)   /* host sampling (call_modes.h): times are estimates */
      sb_printf(b, ",\"untimed_calls\":%llu", (unsigned long long)p->untimed_calls);
    if (p->unseen_calls)   /* lean calls (snapshot.c, scale_unseen): calls are estimates */
      sb_printf(b, ",\"unseen_calls\":%llu", (unsigned long long)p->unseen_calls);
    if (p->gpu_launch_samples)   /* launch_timer.h */
      sb_printf(b, ",\"gpu_launch_ns\":%llu,\"gpu_launch_samples\":%llu",
                (unsigned long long)p->gpu_launch_ns, (unsigned long long)p->gpu_launch_samples);
    if (p->leaf_type & (ncclProfileColl | ncclProfileP2p))   /* every rank's, for the pooled mean */
      sb_printf(b, ",\"gpu_launch_calls\":%llu", (unsigned long long)p->gpu_launch_calls);
    sb_printf(b, "}\n");
  }
}

/* Paths first seen after MPI_Finalize began (snapshot.c keeps the run's
 * numbers from there): no numbers and no global id, only what names them,
 * so that the trace records of the events that came later resolve their
 * "path".  Readers that collate skip them ("afterFinalize"). */
static void late_path_records(sbuf *b) {
  if (!cp_snapshot_paths_after_end) return;
  collprof_path_stat *late = NULL;
  const size_t n = cp_snapshot_paths_after_end(&late);
  for (size_t i = 0; i < n; i++) {
    const collprof_path_stat *p = &late[i];
    if (!p->path) continue;
    path_head(b, p, -1);
    sb_printf(b, ",\"afterFinalize\":true}\n");
  }
  free(late);
}

static void rank_record(sbuf *b, const collprof_snapshot *s) {
  int rank = cp_output_world_rank() >= 0 ? cp_output_world_rank() : s->world_rank;
  int size = cp_output_world_size() > 0 ? cp_output_world_size() : s->world_size;
  char iso[64];
  cp_iso8601(s->start_wall_ns, iso, sizeof iso);
  sb_printf(b, "{\"recordType\":\"rank\",\"rank\":%d,\"worldSize\":%d,\"pid\":%d,\"host\":",
            rank >= 0 ? rank : -1, size > 0 ? size : 0, s->pid ? s->pid : (int)getpid());
  sb_str(b, s->host[0] ? s->host : cp_meta_host());
  sb_printf(b, ",\"startWall\":\"%s\",\"startTs\":", iso);
  sb_us3(b, s->start_mono_ns);
  sb_printf(b, ",\"endTs\":");
  sb_us3(b, s->end_mono_ns);
  uint64_t dropped = cp_trace_dropped();
  if (s->trace_dropped > dropped) dropped = s->trace_dropped;
  sb_printf(b, ",\"eventMask\":%u,\"gpuSample\":%d,\"gpuSampleSmall\":%d,\"gpuSampleSmallBytes\":%" PRIu64
            ",\"gpuSampleDelayMs\":%u,\"gpuSampleDelayAuto\":%s,\"traceOn\":%s,\"ncclVersion\":%d,\"periods\":",
            s->event_mask, s->gpu_sample, s->gpu_sample_small, s->gpu_sample_small_bytes, s->gpu_sample_delay_ms,
            s->gpu_sample_delay_auto ? "true" : "false",
            s->trace_on && !cp_trace_failed() ? "true" : "false", s->nccl_version);
  sb_str(b, s->periods);
  sb_printf(b, ",\"windows\":");
  sb_str(b, s->windows);
  /* the snapshot's copy, so the MPI layer (which collates from a
   * snapshot) and readers of this file see the same text */
  char frozen[sizeof s->mask_frozen + 1];
  snprintf(frozen, sizeof frozen, "%.*s", (int)sizeof s->mask_frozen, s->mask_frozen);
  sb_printf(b, ",\"maskFrozen\":");
  sb_str(b, frozen);
  sb_printf(b,
            ",\"eventsRecorded\":%llu,\"eventsCounted\":%llu,\"eventsPxn\":%llu,\"unterminated\":%llu,"
            "\"blacklistEvictions\":%llu,\"unknownParent\":%llu,\"traceDropped\":%llu,"
            "\"badCalls\":%llu,\"gpuSampledCalls\":%llu,\"gpuSamplesDropped\":%llu,"
            "\"gpuSamplesDeferred\":%llu,\"gpuSampleGateResets\":%llu,\"gpuLaunchesTimed\":%llu,"
            "\"gpuLaunchesUnattributed\":%llu,\"gpuLaunchesSkipped\":%llu,\"gpuLaunchesUnread\":%llu,\"gpuLaunchesIdle\":%llu,\"memoryBytes\":%llu,\"perEventCostNs\":%.1f,"
            "\"costCallbacks\":%llu,\"costTimedNs\":%llu,\"costWindows\":%llu,\"costWindowNs\":%llu,"
            "\"costSpanNs\":%llu,\"costSlowNs\":%llu,\"costNs\":%llu,\"costErrNs\":%lld,"
            "\"costDenseSpanNs\":%llu,\"costDenseWindows\":%llu,\"costDenseWindowNs\":%llu,"
            "\"costDenseTimedNs\":%llu,\"costDenseCallbacks\":%llu,\"costDenseSlowNs\":%llu,"
            "\"costDenseNs\":%llu,\"costSetupNs\":%llu,\"command\":",
            (unsigned long long)s->events_recorded, (unsigned long long)s->events_counted,
            (unsigned long long)s->events_pxn,
            (unsigned long long)s->unterminated, (unsigned long long)s->blacklist_evictions,
            (unsigned long long)s->unknown_parent, (unsigned long long)dropped,
            (unsigned long long)s->bad_calls, (unsigned long long)s->gpu_sampled_calls,
            (unsigned long long)s->gpu_samples_dropped, (unsigned long long)s->gpu_samples_deferred,
            (unsigned long long)cp_mask_gate_resets(), (unsigned long long)s->gpu_launches_timed,
            (unsigned long long)s->gpu_launches_unattributed, (unsigned long long)s->gpu_launches_skipped,
            (unsigned long long)s->gpu_launches_unread, (unsigned long long)s->gpu_launches_idle,
            (unsigned long long)s->memory_bytes,
            s->per_event_cost_ns >= 0 && s->per_event_cost_ns < 1e15 ? s->per_event_cost_ns : 0.0,
            (unsigned long long)s->cost_callbacks, (unsigned long long)s->cost_timed_ns,
            (unsigned long long)s->cost_windows, (unsigned long long)s->cost_window_ns,
            (unsigned long long)s->cost_span_ns, (unsigned long long)s->cost_slow_ns,
            (unsigned long long)s->cost_est_ns, (long long)s->cost_err_ns,
            (unsigned long long)s->cost_dense_span_ns, (unsigned long long)s->cost_dense_windows,
            (unsigned long long)s->cost_dense_window_ns, (unsigned long long)s->cost_dense_timed_ns,
            (unsigned long long)s->cost_dense_callbacks, (unsigned long long)s->cost_dense_slow_ns,
            (unsigned long long)s->cost_dense_est_ns, (unsigned long long)s->cost_setup_ns);
  sb_str(b, cp_meta_command());
  cp_defer_counts dc;   /* proxy_defer.h: only when proxy-thread callbacks were recorded */
  cp_defer_get_counts(&dc);
  if (dc.recorded)
    sb_printf(b, ",\"proxyDeferred\":%llu,\"proxyDeferApplied\":%llu,\"proxyDeferFull\":%llu,\"proxyDeferStale\":%llu",
              (unsigned long long)dc.recorded, (unsigned long long)dc.applied, (unsigned long long)dc.full,
              (unsigned long long)dc.stale);
  sb_printf(b, ",\"comms\":[");
  for (size_t i = 0; i < s->ncomms; i++) {
    const collprof_comm_info *c = &s->comms[i];
    sb_printf(b, "%s{\"commId\":\"%llu\",\"commName\":", i ? "," : "",
              (unsigned long long)c->comm_id);
    sb_str(b, c->comm_name);
    sb_printf(b, ",\"nranks\":%d,\"nNodes\":%d,\"rank\":%d,\"gpuUuid\":", c->nranks, c->nnodes,
              c->nccl_rank);
    sb_str(b, c->gpu_uuid);
    sb_printf(b, ",\"events\":%llu,\"gpuOffsetNs\":", (unsigned long long)c->events);
    if (c->gpu_offset_valid) sb_printf(b, "%lld}", (long long)c->gpu_offset_ns);
    else sb_printf(b, "null}");
  }
  sb_printf(b, "]}\n");
}

/* Build and write the tail (g_mu held).  0 on success. */
static int write_tail(const int64_t *gids, size_t ng) {
  collprof_snapshot s;
  memset(&s, 0, sizeof s);
  if (collprof_snapshot_take(&s) != 0) {
    static int warned;
    if (!warned++) cp_warn("cannot take the profile snapshot; the rank file has no summary");
    return -1;
  }
  sbuf b = {0};
  path_records(&b, &s, gids, ng);
  late_path_records(&b);
  rank_record(&b, &s);
  if (g_clock_gen)
    sb_printf(&b, "{\"recordType\":\"clock\",\"offsetNs\":%lld,\"rttNs\":%lld}\n",
              (long long)g_clock_off, (long long)g_clock_rtt);
  int rc = -1;
  if (b.oom) {
    cp_warn("out of memory for the rank file summary");
  } else if (cp_trace_set_tail(b.p, b.len) >= 0) {
    rc = 0;
    g_tail_done = 1;
    g_tail_lines = cp_trace_lines();
    g_tail_events = s.events_recorded;
    g_tail_clock = g_clock_gen;
    g_tail_global = gids != NULL;
  }
  free(b.p);
  collprof_snapshot_free(&s);
  return rc;
}

static uint64_t events_now(void) {
  collprof_snapshot s;
  memset(&s, 0, sizeof s);
  if (collprof_snapshot_take(&s) != 0) return UINT64_MAX;
  uint64_t e = s.events_recorded;
  collprof_snapshot_free(&s);
  return e;
}

/* ---- public API ---- */

void collprof_set_identity(int world_rank, int world_size, const char *outdir) {
  if (cp_trace_in_fork_child()) return;
  int moved = cp_output_set_identity(world_rank, world_size, outdir);
  char path[4096];
  cp_output_trace_path(path, sizeof path);
  cp_trace_rename(path);
  if (moved) {
    const char *old = cp_output_abandoned_dir();
    if (old) rmdir(old);   /* only succeeds when we left it empty */
  }
}

void collprof_set_clock_offset(int64_t offset_ns, int64_t rtt_ns) {
  pthread_mutex_lock(&g_mu);
  g_clock_off = offset_ns;
  g_clock_rtt = rtt_ns;
  g_clock_gen++;
  pthread_mutex_unlock(&g_mu);
}

const char *collprof_output_dir(void) {
  const char *d = cp_output_dir();
  if (cp_output_mkdir() != 0) {
    static atomic_int warned;
    if (!atomic_exchange(&warned, 1)) cp_warn("cannot create the output folder %s", d);
  }
  return d;
}

int collprof_write_local(void) {
  if (cp_trace_in_fork_child()) return -1;
  cp_lt_finish(CP_LT_FINISH_MS);   /* timed launches still in flight, before the snapshot */
  pthread_mutex_lock(&g_mu);
  cp_trace_start();
  cp_trace_flush();
  int rc = 0;
  if (!g_tail_done || cp_trace_lines() != g_tail_lines || g_clock_gen != g_tail_clock ||
      events_now() != g_tail_events)
    rc = g_have_gids ? write_tail(g_gids, g_ngids) : write_tail(NULL, 0);
  pthread_mutex_unlock(&g_mu);
  return rc;
}

int collprof_write_global(const int64_t *global_ids, size_t n) {
  if (cp_trace_in_fork_child()) return -1;
  if (!global_ids && n) return -1;
  int64_t *copy = malloc((n ? n : 1) * sizeof *copy);
  if (!copy) return -1;
  if (n) memcpy(copy, global_ids, n * sizeof *copy);
  pthread_mutex_lock(&g_mu);
  free(g_gids);
  g_gids = copy;
  g_ngids = n;
  g_have_gids = 1;
  cp_trace_start();
  cp_trace_flush();
  int rc = write_tail(g_gids, g_ngids);
  pthread_mutex_unlock(&g_mu);
  return rc;
}

void collprof_shutdown(void) {
  if (cp_trace_in_fork_child()) return;
  cp_output_mark_shut_down();
  cp_defer_flush();   /* before the core stops taking callbacks */
  if (cp_plugin_stop) cp_plugin_stop();
  cp_mask_shutdown();
  cp_cost_shutdown();
  collprof_write_local();
  cp_trace_close();
  cp_capture_close();
}

void collprof_set_mpi_managed(int on) { cp_output_set_mpi_managed(on); }

#pragma GCC visibility push(hidden)

void cp_output_on_last_finalize(void) {
  if (cp_trace_in_fork_child()) return;
  cp_lt_finish(CP_LT_FINISH_MS);   /* the GPU is still there: read the timed launches now */
  if (!cp_output_mpi_managed()) collprof_write_local();
  else cp_trace_flush();
}

void cp_local_atexit(void) {
  if (cp_trace_in_fork_child()) return;
  /* Under MPI the tail is normally written at MPI_Finalize; this only
   * writes when that did not happen or when something changed since. */
  collprof_write_local();
  cp_capture_close();
  const uint64_t late = cp_snapshot_events_after_end ? cp_snapshot_events_after_end() : 0;
  if (late)
    cp_warn("%" PRIu64 " NCCL events came after MPI_Finalize began: they are in the trace, "
            "not in the rank file's numbers or the summary", late);
}

#pragma GCC visibility pop

/* For the MPI layer's SIGTERM/SIGINT handler: async-signal-safe, whole
 * lines only (trace_writer.c, trace_file.c). */
void collprof_flush_signal_safe(void) { cp_trace_flush_signal_safe(); }
void collprof_resume_after_signal(void) { cp_trace_resume_signal_safe(); }
