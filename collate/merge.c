/*
 * merge.c — combining per-path numbers and run counters (merge.h).
 */
#include "merge.h"
#include "gpu_estimate.h"
#include <stdlib.h>
#include <string.h>
#include <math.h>

/* ---- numbers ---- */

void cp_pstat_from_rec(cp_pstat *s, const cp_path_rec *p, int rank) {
  memset(s, 0, sizeof *s);
  s->calls = p->calls; s->total_ns = p->total_ns; s->self_ns = p->self_ns;
  s->bytes = p->bytes; s->states = p->states; s->gpu_ns = p->gpu_ns;
  s->gpu_samples = p->gpu_samples; s->unterminated = p->unterminated;
  if (p->gpu_first_samples <= p->gpu_samples && p->gpu_first_ns <= p->gpu_ns) {   /* else damaged: drop */
    s->gpu_first_ns = p->gpu_first_ns; s->gpu_first_samples = p->gpu_first_samples;
  }
  /* The rank's size-class estimate; files from before it (or a damaged
   * one): its first-call samples once, the collator's pooled mean for the
   * other calls (reduce.c), as before size classes. */
  if (p->has_est && p->gpu_est_calls <= p->calls && p->gpu_outliers <= p->gpu_samples) {
    s->gpu_est_ns = p->gpu_est_ns; s->gpu_est_calls = p->gpu_est_calls; s->gpu_outliers = p->gpu_outliers;
    s->gpu_borrowed_calls = p->gpu_borrowed_calls <= p->gpu_est_calls ? p->gpu_borrowed_calls : p->gpu_est_calls;
  } else {
    s->gpu_est_ns = s->gpu_first_ns; s->gpu_est_calls = s->gpu_first_samples;
  }
  s->gpu_launch_ns = p->gpu_launch_ns; s->gpu_launch_samples = p->gpu_launch_samples;
  /* the calls the launch mean stands for; files from before: all of them */
  s->gpu_launch_calls = p->has_launch_calls && p->gpu_launch_calls <= p->calls ? p->gpu_launch_calls : p->calls;
  /* untimed <= calls, unseen <= untimed: a file may say otherwise, and so
   * may a snapshot read while threads run on (MPI_Finalize with NCCL
   * threads busy), which must give the summary a file of it gives */
  s->untimed_calls = p->untimed_calls <= p->calls ? p->untimed_calls : p->calls;
  s->unseen_calls = p->unseen_calls <= s->untimed_calls ? p->unseen_calls : s->untimed_calls;
  s->ev_min_ns = p->calls > s->untimed_calls ? p->min_ns : UINT64_MAX;   /* timed events only */
  s->ev_max_ns = p->calls > s->untimed_calls ? p->max_ns : 0;
  s->nranks = 1;
  s->tmin_ns = s->tmax_ns = p->total_ns;
  s->tmin_rank = s->tmax_rank = rank;
}

_Static_assert(CP_SIZE_CLASSES == CP_GCLS, "the summary's size classes are the plugin's");

/* A class entry whose parts exceed what holds them (a damaged file, or a
 * snapshot read while threads ran on) is left out, wherever it came from,
 * so the online summary and the rank files' agree. */
static int size_rec_sane(const cp_size_rec *e) {
  if (e->first_samples > e->samples || e->first_ns > e->ns) return 0;
  return !e->has_est || (e->est_calls <= e->calls && e->outliers <= e->samples - e->first_samples &&
                         e->outlier_ns <= e->ns - e->first_ns && e->lent <= e->est_calls);
}

int cp_size_add_rec(cp_size_sum *c, const cp_path_rec *p) {
  for (size_t i = 0; i < p->nsizes; i++) {
    const cp_size_rec *e = &p->sizes[i];
    if (!size_rec_sane(e)) continue;
    cp_size_sum *d = &c[cp_gcls_of(e->lo)];
    d->calls += e->calls;
    d->samples += e->samples;
    d->first += e->first_samples;
    if (!e->has_est) {   /* a file from before: no estimate per class */
      d->per_n += e->samples - e->first_samples;
      d->per_ns += e->ns - e->first_ns;
      d->uncovered++;
      continue;
    }
    /* the rank's own estimate of the class (src/gpu_estimate.h), as its
     * path's estimate, which the summary sums, is made of them */
    d->outliers += e->outliers;
    d->lent += e->lent;
    d->per_n += e->samples - e->first_samples - e->outliers;
    d->per_ns += e->ns - e->first_ns - e->outlier_ns;
    d->est_ns += e->est_ns;
    d->uncovered += e->est_calls < e->calls;
  }
  return p->nsizes != 0;
}

void cp_size_combine(cp_size_sum *into, const cp_size_sum *from) {
  for (unsigned k = 0; k < CP_SIZE_CLASSES; k++) {
    cp_size_sum *a = &into[k];
    const cp_size_sum *b = &from[k];
    a->calls += b->calls; a->samples += b->samples; a->first += b->first;
    a->outliers += b->outliers; a->lent += b->lent;
    a->per_n += b->per_n; a->per_ns += b->per_ns;
    a->est_ns += b->est_ns; a->uncovered += b->uncovered;
  }
}

void cp_pstat_add(cp_pstat *into, const cp_pstat *from) {
  into->calls += from->calls; into->total_ns += from->total_ns;
  into->self_ns += from->self_ns; into->bytes += from->bytes;
  into->states += from->states; into->gpu_ns += from->gpu_ns;
  into->gpu_samples += from->gpu_samples; into->unterminated += from->unterminated;
  into->gpu_first_ns += from->gpu_first_ns; into->gpu_first_samples += from->gpu_first_samples;
  into->gpu_est_ns += from->gpu_est_ns; into->gpu_est_calls += from->gpu_est_calls;
  into->gpu_outliers += from->gpu_outliers;
  into->gpu_borrowed_calls += from->gpu_borrowed_calls;
  into->gpu_launch_ns += from->gpu_launch_ns; into->gpu_launch_samples += from->gpu_launch_samples;
  into->gpu_launch_calls += from->gpu_launch_calls;
  into->untimed_calls += from->untimed_calls;
  into->unseen_calls += from->unseen_calls;
  if (from->ev_min_ns < into->ev_min_ns) into->ev_min_ns = from->ev_min_ns;
  if (from->ev_max_ns > into->ev_max_ns) into->ev_max_ns = from->ev_max_ns;
}

void cp_pstat_combine(cp_pstat *into, const cp_pstat *from) {
  cp_pstat_add(into, from);
  into->nranks += from->nranks;
  /* MPI_MINLOC/MAXLOC semantics: the lowest rank wins a tie. */
  if (from->tmin_ns < into->tmin_ns ||
      (from->tmin_ns == into->tmin_ns && from->tmin_rank < into->tmin_rank)) {
    into->tmin_ns = from->tmin_ns; into->tmin_rank = from->tmin_rank;
  }
  if (from->tmax_ns > into->tmax_ns ||
      (from->tmax_ns == into->tmax_ns && from->tmax_rank < into->tmax_rank)) {
    into->tmax_ns = from->tmax_ns; into->tmax_rank = from->tmax_rank;
  }
}

void cp_agg_init(cp_agg *a) {
  memset(a, 0, sizeof *a);
  a->start_wall_min_ns = INT64_MAX;
  a->end_wall_max_ns = INT64_MIN;
  a->runtime_max_rank = -1;
}

void cp_agg_settle_overhead(cp_agg *a) {
  double fb = (double)a->fallback_startup_ns;
  a->overhead_borrowed = 0;
  if (a->fallback_events && a->insitu_events && a->insitu_ns > a->insitu_setup_ns) {
    fb = (double)(a->insitu_ns - a->insitu_setup_ns) / (double)a->insitu_events * (double)a->fallback_events;
    a->overhead_borrowed = 1;
  }
  a->overhead_ns = a->insitu_ns + (uint64_t)llround(fb) + a->fallback_setup_ns;
}

double cp_agg_overhead_ns_per_event(const cp_agg *a) {
  return a->insitu_events && a->insitu_ns > a->insitu_setup_ns
             ? (double)(a->insitu_ns - a->insitu_setup_ns) / (double)a->insitu_events : 0.0;
}

double cp_agg_overhead_share(const cp_agg *a) {
  const double denom = (double)a->ranks_reported * (double)a->runtime_max_ns;
  return denom > 0 ? (double)a->overhead_ns / denom : -1.0;
}

void cp_agg_combine(cp_agg *into, const cp_agg *f) {
  into->ranks_reported += f->ranks_reported;
  into->ranks_with_nccl += f->ranks_with_nccl;
#define SUM(x) into->x += f->x;
  CP_RUN_COUNTERS(SUM)
#undef SUM
  into->overhead_insitu_ranks += f->overhead_insitu_ranks;
  into->cost_callbacks += f->cost_callbacks; into->cost_windows += f->cost_windows;
  into->cost_window_ns += f->cost_window_ns; into->cost_span_ns += f->cost_span_ns;
  into->cost_err_var += f->cost_err_var; into->cost_err_unknown += f->cost_err_unknown;
  into->cost_setup_ns += f->cost_setup_ns;
  into->insitu_ns += f->insitu_ns; into->insitu_setup_ns += f->insitu_setup_ns;
  into->insitu_events += f->insitu_events;
  into->fallback_ranks += f->fallback_ranks; into->fallback_events += f->fallback_events;
  into->fallback_setup_ns += f->fallback_setup_ns; into->fallback_startup_ns += f->fallback_startup_ns;
  into->memory_bytes += f->memory_bytes;
  if (f->memory_max_bytes > into->memory_max_bytes) into->memory_max_bytes = f->memory_max_bytes;
  cp_agg_settle_overhead(into);
  if (f->start_wall_min_ns < into->start_wall_min_ns) into->start_wall_min_ns = f->start_wall_min_ns;
  if (f->end_wall_max_ns > into->end_wall_max_ns) into->end_wall_max_ns = f->end_wall_max_ns;
  if (f->runtime_max_rank >= 0 &&
      (into->runtime_max_rank < 0 || f->runtime_max_ns > into->runtime_max_ns ||
       (f->runtime_max_ns == into->runtime_max_ns && f->runtime_max_rank < into->runtime_max_rank))) {
    into->runtime_max_ns = f->runtime_max_ns; into->runtime_max_rank = f->runtime_max_rank;
  }
  if (f->nccl_version > into->nccl_version) into->nccl_version = f->nccl_version;
  into->event_mask_or |= f->event_mask_or;
  if (into->bw_nranks == 0) into->bw_nranks = f->bw_nranks;
  else if (f->bw_nranks != 0 && f->bw_nranks != into->bw_nranks) into->bw_nranks = -1;
}

