/*
 * summary_log.c — summary.log, the human-readable report of all ranks, in
 * the manner of Vftrace's <name>_all.log (report.h).  Sections in order:
 * header, run summary, communicators, runtime profile (by total time),
 * min/max across ranks, by type:func, global paths, configuration,
 * collation.  Columns are described in man/collprof.7.
 */
#include "report.h"
#include "export.h"
#include "frozen.h"
#include "reduce.h"
#include "merge.h"
#include "collprof.h"
#include <math.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void cp_iso_time(int64_t wall_ns, char *buf, size_t len) {
  if (!len) return;
  buf[0] = 0;
  if (wall_ns <= 0 || wall_ns == INT64_MAX) return;
  time_t t = (time_t)(wall_ns / 1000000000);
  struct tm tm;
  if (!gmtime_r(&t, &tm)) return;
  strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static double sec(uint64_t ns) { return (double)ns / 1e9; }

static void rule(FILE *f, int n) { for (int i = 0; i < n; i++) fputc('-', f); fputc('\n', f); }

static int path_width(const cp_summary *s) {
  int w = 4;
  for (size_t i = 0; i < s->npaths; i++) { int l = (int)strlen(s->paths[i].path); if (l > w) w = l; }
  return w;
}

static void fmt_bw(char *b, size_t n, const cp_gderived *d) {
  if (d->bw_valid) snprintf(b, n, "%.3f", d->busbw_gbs); else snprintf(b, n, "-");
}

/* type:func of a path's leaf, e.g. "Coll:AllReduce" */
static void type_func(char *b, size_t n, const cp_gpath *p) {
  const char *t = cp_type_short_name(p->leaf_type);
  if (!*t) t = "?";
  if (p->leaf_func && *p->leaf_func) snprintf(b, n, "%s:%s", t, p->leaf_func);
  else snprintf(b, n, "%s", t);
}

/* What a freeze costs the profile, from the reason's "KernelCh on|off". */
static const char *freeze_hint(const char *reason) {
  int off = strstr(reason, "KernelCh off") != NULL;
  int graph = strstr(reason, "graph") != NULL;
  if (off && graph)
    return "no GPU samples after it; graph replays captured without KernelCh send no events; see README";
  /* a second thread: the start delay's usual outcome (start_delay.c) */
  if (off)
    return "no GPU samples after it, and no events for replays of graphs captured after it; "
           "--gpu-sample 1 gives both at KernelCh's cost; see README, \"Threads and the frozen mask\"";
  if (strstr(reason, "KernelCh on")) return "KernelCh on for every call after it; see README";
  return "see README";
}

static void frozen_line(FILE *f, const cp_frozen *z) {
  char ranks[200];
  cp_rank_ranges_text(ranks, sizeof ranks, z->ranges, z->nranges);
  fprintf(f, "  Event mask frozen on %s %s: %s (%s)\n", z->nranks == 1 ? "rank" : "ranks", ranks,
          z->reason, freeze_hint(z->reason));
}

typedef struct { char key[160]; uint64_t paths, calls, total, self; } tf_row;
static int tf_cmp(const void *x, const void *y) {
  const tf_row *a = x, *b = y;
  if (a->total != b->total) return a->total > b->total ? -1 : 1;
  return strcmp(a->key, b->key);
}

/* GPU time per Coll/P2p path from its KernelCh samples (collate/reduce.h:
 * first-call samples counted once, the periodic ones' mean for the other
 * calls), largest first; nothing when no path has a sample. */
typedef struct { size_t i; double est; } gpu_row;
static int gpu_cmp(const void *x, const void *y) {
  const gpu_row *a = x, *b = y;
  if (a->est != b->est) return a->est > b->est ? -1 : 1;
  return a->i < b->i ? -1 : a->i > b->i;
}

static void gpu_table(FILE *f, const cp_summary *s, int pw) {
  gpu_row *rows = calloc(s->npaths + 1, sizeof *rows);
  size_t n = 0;
  for (size_t i = 0; rows && i < s->npaths; i++) {
    const cp_gpath *p = &s->paths[i];
    const cp_pgpu *g = cp_gpath_gpu(p);
    if ((p->leaf_type != 2 && p->leaf_type != 4) || !(g->gpu_samples || g->gpu_launch_samples)) continue;
    cp_gderived d; cp_gpath_derive(s, p, &d);
    rows[n].i = i; rows[n].est = d.gpu_est_ns > d.launch_est_ns ? d.gpu_est_ns : d.launch_est_ns; n++;
  }
  if (n) {
    int first_only = 0;   /* a row with first-call samples alone: its line under the table */
    int borrowed = 0;     /* a row with calls given other sizes' mean: its line too */
    qsort(rows, n, sizeof *rows, gpu_cmp);
    fprintf(f, "GPU time (Coll/P2p, from KernelCh samples; ~ estimated per message-size class,"
               " first-call samples and outliers counted once;\n"
               "  Launches: timed kernel launches, CUDA events on the launch stream, GPU/call their mean"
               " as an application's events see it; per message size: \"Message sizes\" below)\n");
    int lw = fprintf(f, "%12s | %9s | %7s | %8s | %12s | %13s | %13s | %9s | %13s | %-*s | %s\n", "Calls", "Samples",
                     "First", "Outliers", "Borrowed", "GPU[s]", "GPU/call[us]", "Launches", "GPU/call[us]", pw, "Path",
                     "ID");
    rule(f, lw - 1);
    for (size_t k = 0; k < n; k++) {
      const cp_gpath *p = &s->paths[rows[k].i];
      const cp_pgpu *g = cp_gpath_gpu(p);
      cp_gderived d; cp_gpath_derive(s, p, &d);
      char kc[2][24], la[24], bo[24];
      if (g->gpu_samples && !d.gpu_exact && !d.gpu_first_only)
        snprintf(bo, sizeof bo, "%12" PRIu64, d.gpu_borrowed_calls);
      else
        snprintf(bo, sizeof bo, "%12s", "-");
      borrowed |= d.gpu_borrowed_calls > 0;
      if (g->gpu_samples) {
        /* ">": the sampled calls alone, "f": the first-call samples' mean */
        snprintf(kc[0], sizeof kc[0], "%s%12.6f", d.gpu_first_only ? ">" : d.gpu_exact ? " " : "~",
                 d.gpu_est_ns / 1e9);
        snprintf(kc[1], sizeof kc[1], "%s%12.3f", d.gpu_first_only ? "f" : " ", d.gpu_call_ns / 1e3);
        first_only |= d.gpu_first_only;
      } else {
        snprintf(kc[0], sizeof kc[0], "%13s", "-");
        snprintf(kc[1], sizeof kc[1], "%13s", "-");
      }
      if (g->gpu_launch_samples) snprintf(la, sizeof la, "%13.3f", d.launch_call_ns / 1e3);
      else snprintf(la, sizeof la, "%13s", "-");
      fprintf(f, "%12" PRIu64 " | %9" PRIu64 " | %7" PRIu64 " | %8" PRIu64 " | %s | %s | %s | %9" PRIu64 " | %s | %-*s | %" PRId64 "\n",
              p->s.calls, g->gpu_samples, g->gpu_first_samples, g->gpu_outliers, bo, kc[0], kc[1],
              g->gpu_launch_samples, la, pw, p->path, p->id);
    }
    if (borrowed)
      fputs("Borrowed: calls of a message size (log2 class) without a periodic sample of its own, given the\n"
            "  nearest sampled sizes' mean (where a rank had none, every rank's): too long where those are\n"
            "  larger, as for a sweep's small sizes run within the sampling start delay\n"
            "  (COLLPROF_GPU_SAMPLE_DELAY_MS); exact: --gpu-sample 1\n", f);
    if (first_only)
      fprintf(f, "> f: only first-call samples, which may hold NCCL's connection set-up and waits for peers:\n"
                 "  GPU[s] is the sampled calls' time alone (the path took at least that), GPU/call their mean;\n"
                 "  no estimate for the other calls (more samples: --gpu-sample 1, or a longer run)\n");
    fputc('\n', f);
  }
  free(rows);
}

/* The Coll/P2p paths' message-size classes (cp_summary_sizes), the ones
 * with the most GPU time first; the rest in summary.json and
 * collprof-collate --sizes. */
#define SIZES_TOP 10
static void sizes_section(FILE *f, const cp_summary *s) {
  size_t *o = cp_sized_by_gpu(s);
  if (!o) return;
  const size_t n = s->nsized < SIZES_TOP ? s->nsized : SIZES_TOP;
  fprintf(f, "Message sizes: the %zu Coll/P2p path%s with the most GPU time, per log2 size class over all ranks\n",
          n, n == 1 ? "" : "s");
  cp_size_legend(f, s);
  for (size_t k = 0; k < n; k++) {
    const cp_sized *z = &s->sized[o[k]];
    cp_size_table(f, s, &s->paths[z->id], z->c);
  }
  if (s->nsized > n)
    fprintf(f, "\n%zu more path%s: \"sizes\" in summary.json, or collprof-collate --sizes\n", s->nsized - n,
            s->nsized - n == 1 ? "" : "s");
  fputc('\n', f);
  free(o);
}

static void profile(FILE *f, const cp_summary *s) {
  int pw = path_width(s);
  fprintf(f, "Runtime profile (all ranks; times summed over ranks, sorted by total time)\n");
  int lw = fprintf(f, "%12s | %12s | %12s | %7s | %12s | %14s | %11s | %9s | %7s | %-*s | %s\n",
                   "Calls", "Total[s]", "Self[s]", "Self[%]", "Avg/call[us]", "Bytes",
                   "BusBW[GB/s]", "Imbal[%]", "on rank", pw, "Path", "ID");
  rule(f, lw - 1);
  size_t *o = cp_summary_order_by_total(s);
  for (size_t k = 0; o && k < s->npaths; k++) {
    const cp_gpath *p = &s->paths[o[k]];
    cp_gderived d; cp_gpath_derive(s, p, &d);
    char bw[32]; fmt_bw(bw, sizeof bw, &d);
    char calls[24];   /* "~": estimated where lean calls left some unseen (below) */
    snprintf(calls, sizeof calls, "%s%" PRIu64, p->s.unseen_calls ? "~" : "", p->s.calls);
    fprintf(f, "%12s | %12.6f | %12.6f | %7.2f | %12.3f | %14" PRIu64 " | %11s | %9.2f | %7d | %-*s | %" PRId64 "\n",
            calls, sec(p->s.total_ns), sec(p->s.self_ns), d.self_pct, d.call_avg_ns / 1e3,
            p->s.bytes, bw, d.imbalance_pct, d.imbalance_rank, pw, p->path, p->id);
  }
  free(o);
  /* host sampling (COLLPROF_HOST_SAMPLE, call_modes.h): counts exact, times
   * the timed calls' mean times the calls */
  uint64_t calls = 0, untimed = 0, unseen = 0;
  size_t est = 0, cest = 0;
  for (size_t i = 0; i < s->npaths; i++) {
    calls += s->paths[i].s.calls;
    untimed += s->paths[i].s.untimed_calls;
    unseen += s->paths[i].s.unseen_calls;
    est += s->paths[i].s.untimed_calls != 0;
    cest += s->paths[i].s.unseen_calls != 0;
  }
  if (untimed)
    fprintf(f, "Host times sampled (COLLPROF_HOST_SAMPLE): %" PRIu64 " of %" PRIu64
               " events timed; Total and Self of %zu paths are estimates (the timed events' mean x calls),"
               " Calls and Bytes are exact%s\n", calls - untimed, calls, est,
            cest ? " but where lean calls left them unseen (below)" : "");
  /* lean calls (COLLPROF_LEAN): NCCL sent the API events alone */
  if (unseen)
    fprintf(f, "Lean calls (COLLPROF_LEAN): Calls (marked ~) and States of %zu paths below Coll/P2p or GroupApi are "
               "estimates (%" PRIu64 " of their calls unseen: proxy events per call seen of each size class x "
               "the class's lean calls; KernelLaunch and Group those seen x the GroupApi's calls / its calls "
               "not lean); GroupApi, CollApi, P2pApi, Coll and P2p calls are exact\n", cest, unseen);
  fputc('\n', f);
  gpu_table(f, s, pw);

  fprintf(f, "Min/max across ranks (per-rank totals; a rank without the path is not counted)\n");
  lw = fprintf(f, "%6s | %12s | %6s | %12s | %6s | %12s | %6s | %9s | %s\n",
               "ID", "t_max[s]", "rank", "t_min[s]", "rank", "t_avg[s]", "ranks", "Imbal[%]", "Path");
  rule(f, lw - 1);
  for (size_t i = 0; i < s->npaths; i++) {
    const cp_gpath *p = &s->paths[i];
    cp_gderived d; cp_gpath_derive(s, p, &d);
    fprintf(f, "%6" PRId64 " | %12.6f | %6d | %12.6f | %6d | %12.6f | %6u | %9.2f | %s\n",
            p->id, sec(p->s.tmax_ns), p->s.tmax_rank, sec(p->s.tmin_ns), p->s.tmin_rank,
            d.avg_ns / 1e9, p->s.nranks, d.imbalance_pct, p->path);
  }
  fputc('\n', f);

  /* grouped by the leaf's type:func */
  tf_row *rows = calloc(s->npaths + 1, sizeof *rows);
  size_t nr = 0;
  for (size_t i = 0; rows && i < s->npaths; i++) {
    char key[160]; type_func(key, sizeof key, &s->paths[i]);
    size_t j = 0;
    while (j < nr && strcmp(rows[j].key, key)) j++;
    if (j == nr) { snprintf(rows[nr].key, sizeof rows[nr].key, "%s", key); nr++; }
    rows[j].paths++; rows[j].calls += s->paths[i].s.calls;
    rows[j].total += s->paths[i].s.total_ns; rows[j].self += s->paths[i].s.self_ns;
  }
  if (rows) qsort(rows, nr, sizeof *rows, tf_cmp);
  fprintf(f, "By type:func (all paths ending in it)\n");
  lw = fprintf(f, "%-32s | %6s | %12s | %12s | %12s | %7s\n", "Type:func", "Paths", "Calls",
               "Total[s]", "Self[s]", "Self[%]");
  rule(f, lw - 1);
  for (size_t j = 0; j < nr; j++)
    fprintf(f, "%-32s | %6" PRIu64 " | %12" PRIu64 " | %12.6f | %12.6f | %7.2f\n", rows[j].key,
            rows[j].paths, rows[j].calls, sec(rows[j].total), sec(rows[j].self),
            s->self_total_ns ? 100.0 * (double)rows[j].self / (double)s->self_total_ns : 0.0);
  free(rows);
  fputc('\n', f);
}

int cp_write_summary_log(const cp_summary *s, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) { fprintf(stderr, "collprof: cannot write %s: %s\n", path, strerror(errno)); return -1; }
  char t0[64], t1[64], mask[256];
  cp_iso_time(s->agg.start_wall_min_ns, t0, sizeof t0);
  cp_iso_time(s->agg.end_wall_max_ns, t1, sizeof t1);
  cp_mask_names(s->event_mask, mask, sizeof mask);

  fprintf(f, "collprof %s - summary of all ranks\n\n", COLLPROF_VERSION);
  fprintf(f, "Command:          %s\n", s->command);
  fprintf(f, "Start date:       %s\n", t0);
  fprintf(f, "End date:         %s\n", t1);
  fprintf(f, "Ranks:            %d (%" PRIu64 " reported, %" PRIu64 " used NCCL)\n", s->world_size,
          s->agg.ranks_reported, s->agg.ranks_with_nccl);
  fprintf(f, "Hosts:            %zu:", s->nhosts);
  for (size_t i = 0; i < s->nhosts; i++)
    fprintf(f, " %s (%" PRIu64 ")", *s->hosts[i].name ? s->hosts[i].name : "?", s->hosts[i].ranks);
  fputc('\n', f);
  if (s->agg.nccl_version)
    fprintf(f, "NCCL version:     %d.%d.%d (%d)\n", s->agg.nccl_version / 10000,
            s->agg.nccl_version / 100 % 100, s->agg.nccl_version % 100, s->agg.nccl_version);
  else fprintf(f, "NCCL version:     unknown\n");
  /* KernelCh is GPU sampling's (the rule below, under Configuration), not the base mask's */
  fprintf(f, "Event mask:       0x%x %s%s\n\n", s->event_mask, mask,
          s->gpu_sample <= 0 ? ((s->event_mask & 64u) ? "; KernelCh never (GPU sampling off)" : "")
          : !s->agg.gpu_sampled_calls ? "; KernelCh on no API call (GPU sampling took none)"
          : s->gpu_sample == 1 ? "; KernelCh on every API call (GPU sampling)"
                               : "; KernelCh on sampled API calls (GPU sampling)");

  fprintf(f, "Run summary\n");
  fprintf(f, "  Runtime [s]:                  %.6f (longest rank: %d)\n", sec(s->agg.runtime_max_ns),
          s->agg.runtime_max_rank);
  fprintf(f, "  Events recorded:              %" PRIu64 "\n", s->agg.events_recorded);
  /* host sampling: events of calls only counted (on their path: no slot,
   * no time, no trace record), whose cheaper callbacks the overhead
   * figure leaves out; rank files without eventsCounted (older) say so
   * only through their paths' untimed calls */
  int counted = s->agg.events_counted != 0;
  for (size_t i = 0; i < s->npaths && !counted; i++) counted = s->paths[i].s.untimed_calls != 0;
  if (s->agg.events_counted)
    fprintf(f, "  Events counted only:          %" PRIu64 " (host sampling: counted on their path, neither timed nor traced)\n",
            s->agg.events_counted);
  /* In situ (src/cost_sample.c): every callback's time, estimated from
   * those timed in windows; else the start-up cost per recorded event. */
  const cp_agg *a = &s->agg;
  const double cover = a->cost_span_ns ? 100.0 * (double)a->cost_window_ns / (double)a->cost_span_ns : 0;
  /* one standard error, the in-situ ranks' combined (collate/rundata.h) */
  char err[96] = "";
  if (a->overhead_insitu_ranks && a->cost_err_unknown < a->overhead_insitu_ranks)
    snprintf(err, sizeof err, " +- %.6f", sqrt(a->cost_err_var) / 1e9);
  /* one-off set-ups (src/oneoff.h), timed whole: in the figure, said apart */
  char setup[96] = "";
  if (a->cost_setup_ns)
    snprintf(setup, sizeof setup, "; one-off set-ups timed whole: %.6f", sec(a->cost_setup_ns));
  char unknown[96] = "";
  if (a->cost_err_unknown)
    snprintf(unknown, sizeof unknown, "; %" PRIu64 " rank%s with one window: no error", a->cost_err_unknown,
             a->cost_err_unknown == 1 ? "" : "s");
  if (a->overhead_insitu_ranks && a->overhead_insitu_ranks >= a->ranks_reported)
    fprintf(f, "  Estimated overhead [s]:       %.6f%s (collprof's callbacks timed where NCCL made them: %" PRIu64
               " in %" PRIu64 " windows, %.2f%% of the time%s; all ranks%s)\n",
            sec(a->overhead_ns), err, a->cost_callbacks, a->cost_windows, cover, setup, unknown);
  else if (a->overhead_insitu_ranks && a->overhead_borrowed)
    fprintf(f, "  Estimated overhead [s]:       %.6f%s (callbacks timed where NCCL made them on %" PRIu64 " of %" PRIu64
               " ranks: %" PRIu64 " in %" PRIu64 " windows, %.2f%% of the time%s; the others: their events x "
               "those ranks' cost per event, %.1f ns, error not included%s)\n",
            sec(a->overhead_ns), err, a->overhead_insitu_ranks, a->ranks_reported, a->cost_callbacks, a->cost_windows,
            cover, unknown, cp_agg_overhead_ns_per_event(a), setup);
  else if (a->overhead_insitu_ranks)
    fprintf(f, "  Estimated overhead [s]:       %.6f%s (callbacks timed where NCCL made them on %" PRIu64 " of %" PRIu64
               " ranks: %" PRIu64 " in %" PRIu64 " windows, %.2f%% of the time%s; the others: recorded events x "
               "per-event cost%s%s)\n",
            sec(a->overhead_ns), err, a->overhead_insitu_ranks, a->ranks_reported, a->cost_callbacks, a->cost_windows,
            cover, unknown, counted ? ", the callbacks of calls only counted not included" : "", setup);
  else
    fprintf(f, "  Estimated overhead [s]:       %.6f (recorded events x per-event cost, all ranks%s%s)\n",
            sec(a->overhead_ns), counted ? "; the callbacks of calls only counted not included" : "", setup);
  /* what a user asks first: how much of the run that is */
  const double share = cp_agg_overhead_share(a);
  if (share >= 0)
    fprintf(f, "  Overhead share [%%]:           %.3f (the overhead over %" PRIu64 " rank%s x the longest run time)\n",
            100.0 * share, a->ranks_reported, a->ranks_reported == 1 ? "" : "s");
  fprintf(f, "  Memory used [MiB]:            %.3f (largest rank %.3f)\n",
          (double)s->agg.memory_bytes / 1048576.0, (double)s->agg.memory_max_bytes / 1048576.0);
  fprintf(f, "  Unterminated events:          %" PRIu64 "\n", s->agg.unterminated);
  fprintf(f, "  Blacklist evictions:          %" PRIu64 "\n", s->agg.blacklist_evictions);
  fprintf(f, "  PXN events:                   %" PRIu64 "\n", s->agg.events_pxn);
  fprintf(f, "  Unknown-parent events:        %" PRIu64 "\n", s->agg.unknown_parent);
  fprintf(f, "  Trace records dropped:        %" PRIu64 "\n", s->agg.trace_dropped);
  fprintf(f, "  Bad calls:                    %" PRIu64 "\n", s->agg.bad_calls);
  fprintf(f, "  GPU-sampled API calls:        %" PRIu64 "\n", s->agg.gpu_sampled_calls);
  fprintf(f, "  GPU samples dropped:          %" PRIu64 " (KernelCh spans NCCL may have overwritten)\n",
          s->agg.gpu_samples_dropped);
  fprintf(f, "  GPU samples skipped:          %" PRIu64 " (an earlier sample's KernelCh was still due)\n",
          s->agg.gpu_samples_deferred);
  fprintf(f, "  Kernel launches timed:        %" PRIu64 " (%" PRIu64 " of several or no Coll/P2p, %" PRIu64
             " on an idle stream; %" PRIu64 " skipped, %" PRIu64 " unread)\n",
          s->agg.gpu_launches_timed, s->agg.gpu_launches_unattributed, s->agg.gpu_launches_idle,
          s->agg.gpu_launches_skipped, s->agg.gpu_launches_unread);
  for (size_t i = 0; i < s->nfrozen; i++) frozen_line(f, &s->frozen[i]);
  fprintf(f, "  Global paths:                 %zu\n", s->npaths);
  fprintf(f, "  Hash collisions:              %zu\n", s->ncollisions);
  for (size_t i = 0; i < s->npaths; i++)
    if (s->paths[i].collides)
      fprintf(f, "    hash 0x%016" PRIx64 ": ID %" PRId64 " %s\n", s->paths[i].hash, s->paths[i].id,
              s->paths[i].path);
  fputc('\n', f);

  fprintf(f, "Communicators\n");
  int lw = fprintf(f, "%20s | %-24s | %6s | %6s | %8s | %12s\n", "commId", "Name", "nranks",
                   "nNodes", "Reported", "Events");
  rule(f, lw - 1);
  int one_rank = 0;
  for (size_t i = 0; i < s->ncomms; i++) {
    const cp_comm_sum *c = &s->comms[i];
    fprintf(f, "%20" PRIu64 " | %-24s | %6d | %6d | %8" PRIu64 " | %12" PRIu64 "%s\n", c->comm_id,
            *c->name ? c->name : "-", c->nranks, c->nnodes, c->members, c->events, c->nranks == 1 ? " *" : "");
    one_rank |= c->nranks == 1;
  }
  if (one_rank)   /* src/plugin.c, init_common */
    fprintf(f, "  * " CP_ONE_RANK_WHY " (a local copy); they are not profiled\n");
  fputc('\n', f);

  profile(f, s);
  sizes_section(f, s);

  fprintf(f, "Global paths (ID = position in the sorted set of unique (hash, path))\n");
  for (size_t i = 0; i < s->npaths; i++)
    fprintf(f, "  ID%-6" PRId64 " 0x%016" PRIx64 "  %s\n", s->paths[i].id, s->paths[i].hash,
            s->paths[i].path);
  fputc('\n', f);

  fprintf(f, "Configuration (rank %d)\n", s->config_rank);
  fprintf(f, "  NCCL_PROFILE_EVENT_MASK:      0x%x\n", s->event_mask);
  fprintf(f, "  COLLPROF_GPU_SAMPLE:          %d\n", s->gpu_sample);
  if (s->gpu_sample_small_bytes)
    fprintf(f, "  COLLPROF_GPU_SAMPLE_SMALL:    %d (under %" PRIu64 " bytes)\n", s->gpu_sample_small,
            s->gpu_sample_small_bytes);
  else
    fprintf(f, "  COLLPROF_GPU_SAMPLE_SMALL:    %d (no call is small)\n", s->gpu_sample_small);
  char rule[128];
  cp_gpu_rule_text(s->gpu_sample, s->gpu_sample_small, s->gpu_sample_small_bytes, rule, sizeof rule);
  fprintf(f, "  GPU sampling:                 %s\n", rule);
  const char *da = s->gpu_sample_delay_auto ? "auto, " : "";
  if (s->gpu_sample_delay_auto && s->gpu_sample >= 2 && s->agg.events_recorded + s->agg.events_counted == 0)
    /* the rule looks at the first NCCL call, and no event came (one-rank
     * communicators, test/one_rank.t): it never ran */
    fprintf(f, "  COLLPROF_GPU_SAMPLE_DELAY_MS: auto (not decided: no NCCL event came)\n");
  else if (s->gpu_sample_delay_ms > 0 && s->gpu_sample >= 2)
    fprintf(f, "  COLLPROF_GPU_SAMPLE_DELAY_MS: %s%d (no sample before %d ms after the first NCCL call%s)\n", da,
            s->gpu_sample_delay_ms, s->gpu_sample_delay_ms,
            s->gpu_sample_delay_auto ? ": not one rank of each communicator, inited on one thread, then" : "");
  else if (s->gpu_sample_delay_ms >= 0)   /* 0, or not in use: N = 1 ignores it, N = 0 samples nothing */
    fprintf(f, "  COLLPROF_GPU_SAMPLE_DELAY_MS: %s%d (%s)\n", da, s->gpu_sample_delay_ms,
            s->gpu_sample_delay_ms == 0 ? s->gpu_sample_delay_auto && s->gpu_sample >= 2
                                              ? "no delay: one rank of each communicator at the first NCCL call"
                                              : "no delay"
            : s->gpu_sample == 1 ? "not used: every API call sampled"
                                 : "not used: no GPU sampling");
  fprintf(f, "  COLLPROF_TRACE:               %d\n", s->trace_on);
  fprintf(f, "  COLLPROF_PERIODS:             %s\n", s->periods);
  fprintf(f, "  Profiled windows [s]:         %s\n", s->windows[0] ? s->windows : "all the time");
  fprintf(f, "  COLLPROF_HASH_BITS:           %d\n", s->hash_bits);
  fprintf(f, "  Per-event cost [ns]:          %.1f\n", s->per_event_cost_ns);
  fputc('\n', f);

  const cp_collation_info *c = &s->coll;
  fprintf(f, "Collation\n");
  fprintf(f, "  Mode:                         %s\n", c->online ? "online (MPI tree)" : "offline");
  fprintf(f, "  Rounds:                       %d\n", c->rounds);
  fprintf(f, "  Wall time [s]:                %.6f\n", sec(c->wall_ns));
  fprintf(f, "  Largest receive [bytes]:      %" PRIu64 " (rank %d)\n", c->max_recv_bytes, c->max_recv_rank);
  fprintf(f, "  Global set [bytes]:           %" PRIu64 "\n", c->global_set_bytes);

  int bad = ferror(f);
  if (fclose(f) || bad) {
    fprintf(stderr, "collprof: error writing %s\n", path);
    return -1;
  }
  return 0;
}

int cp_write_summaries(const cp_summary *s, const char *dir) {
  char p[4200];
  snprintf(p, sizeof p, "%s/summary.log", dir);
  int rc = cp_write_summary_log(s, p);
  snprintf(p, sizeof p, "%s/summary.json", dir);
  return cp_write_summary_json(s, p) || rc ? -1 : 0;
}
