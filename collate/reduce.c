/*
 * reduce.c — finishing a cp_summary and its derived numbers (reduce.h).
 */
#include "reduce.h"
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

void cp_summary_config(cp_summary *out, const cp_rank_data *cfg, int world_size, int hash_bits) {
  out->world_size = world_size;
  out->hash_bits = hash_bits;
  out->config_rank = -1;
  out->gpu_sample_delay_ms = -1;
  if (cfg) {
    out->config_rank = cfg->rank;
    snprintf(out->command, sizeof out->command, "%s", cfg->command ? cfg->command : "");
    out->event_mask = cfg->event_mask;
    out->gpu_sample = cfg->gpu_sample;
    out->gpu_sample_small = cfg->gpu_sample_small;
    out->gpu_sample_small_bytes = cfg->gpu_sample_small_bytes;
    out->gpu_sample_delay_ms = cfg->gpu_sample_delay_ms;
    out->gpu_sample_delay_auto = cfg->gpu_sample_delay_auto;
    out->trace_on = cfg->trace_on;
    snprintf(out->periods, sizeof out->periods, "%s", cfg->periods);
    snprintf(out->windows, sizeof out->windows, "%s", cfg->windows);
    out->per_event_cost_ns = cfg->per_event_cost_ns;
  }
}

static int starts(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static void bandwidth(const cp_summary *s, const cp_gpath *p, const cp_pstat *st, cp_gderived *d) {
  d->bw_valid = 0; d->algbw_gbs = d->busbw_gbs = 0;
  if (!s) return;
  if (!st->calls || !st->bytes) return;
  int coll = p->leaf_type == 2, p2p = p->leaf_type == 4;
  if (!coll && !p2p) return;
  /* GPU time only: a Coll's host time is NCCL's enqueue (about 2 us) unless
   * KernelCh or proxy events hold it open (ABI doc), so bytes over it gave
   * terabytes per second where no call was sampled (--gpu-sample 0, a mask
   * frozen with KernelCh off); nor a first-call mean (gpu_estimate) */
  if (!st->gpu_samples || d->gpu_first_only) return;
  double t = d->gpu_call_ns;
  if (t <= 0) return;
  double mult, factor;
  if (!cp_bw_factors(p->leaf_type, p->leaf_func, s->agg.bw_nranks, &mult, &factor)) return;
  const double bytes = (double)st->bytes / (double)st->calls * mult;   /* per call and rank, x n where S is */
  d->algbw_gbs = bytes / t;              /* bytes per ns = GB/s */
  d->busbw_gbs = d->algbw_gbs * factor;
  d->bw_valid = 1;
}

int cp_bw_factors(uint32_t leaf_type, const char *func, int n, double *bytes_mult, double *factor) {
  *bytes_mult = *factor = 1;
  if (leaf_type == 4) return 1;          /* P2p: S = the bytes, factor 1 */
  if (leaf_type != 2 || n <= 0) return 0;
  const char *f = func ? func : "";
  if (starts(f, "AllReduce")) *factor = 2.0 * (n - 1) / n;
  else if (starts(f, "AllGather")) { *bytes_mult = n; *factor = (double)(n - 1) / n; }
  else if (starts(f, "ReduceScatter")) { *bytes_mult = n; *factor = (double)(n - 1) / n; }
  else if (starts(f, "AlltoAll") || starts(f, "AllToAll")) *factor = (double)(n - 1) / n;
  return 1;
}

void cp_summary_finish(cp_summary *s) {
  uint64_t self_total = 0;
  for (size_t i = 0; i < s->npaths; i++) self_total += s->paths[i].s.self_ns;
  s->self_total_ns = self_total;
  s->ncollisions = 0;
  for (size_t i = 0; i < s->npaths; i++) {
    cp_gpath *p = &s->paths[i];
    int before = i > 0 && s->paths[i - 1].hash == p->hash;
    int after = i + 1 < s->npaths && s->paths[i + 1].hash == p->hash;
    p->collides = before || after;
    if (after && !before) s->ncollisions++;
  }
}

/* Coll/P2p GPU time from samples (reduce.h): the ranks' size-class
 * estimates, and for the calls they do not cover the mean of every rank's
 * periodic samples.  Without a periodic sample on any rank there is no
 * mean to lend: a first call is no typical one.  It may carry NCCL's
 * connection set-up and the wait for peers (the bundled ag4_net capture:
 * 5.4-5.9 ms first calls, 0.06-0.7 ms after; lending theirs made the
 * demo's all-gather 12 times too long, 0.78 s against 0.065 s with every
 * call sampled), or be a sweep's smallest size (gpu_sampling.t's mixed
 * replay, before class forcing: an 8 B all-reduce's 3.4 us stood for calls
 * averaging 24 us).
 * So such a path reports its sampled calls alone. */
static void gpu_estimate(const cp_pstat *st, cp_gderived *d) {
  const double g = (double)st->gpu_ns;
  uint64_t sf = st->gpu_first_samples, f = st->gpu_first_ns;
  if (sf > st->gpu_samples || f > st->gpu_ns) sf = 0, f = 0;   /* damaged (merge.c drops a rank's) */
  d->gpu_exact = st->gpu_samples >= st->calls;
  if (!d->gpu_exact && sf == st->gpu_samples) {
    d->gpu_first_only = 1;
    d->gpu_est_ns = g;
    d->gpu_call_ns = g / (double)st->gpu_samples;
    return;
  }
  double pooled = sf < st->gpu_samples ? (g - (double)f) / (double)(st->gpu_samples - sf)
                                       : g / (double)st->gpu_samples;
  uint64_t covered = st->gpu_est_calls < st->calls ? st->gpu_est_calls : st->calls;
  d->gpu_est_ns = d->gpu_exact ? g : (double)st->gpu_est_ns + pooled * (double)(st->calls - covered);
  if (!d->gpu_exact) {
    const uint64_t b = st->gpu_borrowed_calls < covered ? st->gpu_borrowed_calls : covered;
    d->gpu_borrowed_calls = b + (st->calls - covered);
  }
  d->gpu_call_ns = st->calls ? d->gpu_est_ns / (double)st->calls : pooled;
}

void cp_gpath_derive(const cp_summary *s, const cp_gpath *p, cp_gderived *d) {
  cp_pstat whole;
  const cp_pstat *st = cp_gpath_pstat(p, &whole);
  memset(d, 0, sizeof *d);
  d->avg_ns = st->nranks ? (double)st->total_ns / st->nranks : 0;
  double dmax = (double)st->tmax_ns - d->avg_ns, dmin = d->avg_ns - (double)st->tmin_ns;
  if (d->avg_ns > 0 && dmin > dmax) {
    d->imbalance_pct = -100.0 * dmin / d->avg_ns; d->imbalance_rank = st->tmin_rank;
  } else {
    d->imbalance_pct = d->avg_ns > 0 ? 100.0 * dmax / d->avg_ns : 0;
    d->imbalance_rank = st->tmax_rank;
  }
  d->self_pct = s && s->self_total_ns ? 100.0 * (double)st->self_ns / (double)s->self_total_ns : 0;
  d->call_avg_ns = st->calls ? (double)st->total_ns / (double)st->calls : 0;
  if (p->leaf_type == 64) {              /* KernelCh: every event has its GPU time */
    d->gpu_est_ns = (double)st->gpu_ns; d->gpu_exact = st->gpu_samples > 0;
    d->gpu_call_ns = st->gpu_samples ? (double)st->gpu_ns / (double)st->gpu_samples : 0;
  } else if (st->gpu_samples) {
    gpu_estimate(st, d);
  }
  if (st->gpu_launch_samples) {
    d->launch_call_ns = (double)st->gpu_launch_ns / (double)st->gpu_launch_samples;
    d->launch_est_ns = d->launch_call_ns * (double)st->gpu_launch_calls;   /* the calls it stands for */
  }
  bandwidth(s, p, st, d);
}

static int by_total(const void *x, const void *y, void *ctx) {
  const cp_summary *s = ctx;
  const cp_gpath *a = &s->paths[*(const size_t *)x], *b = &s->paths[*(const size_t *)y];
  if (a->s.total_ns != b->s.total_ns) return a->s.total_ns > b->s.total_ns ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

size_t *cp_summary_order_by_total(const cp_summary *s) {
  size_t *o = malloc((s->npaths + 1) * sizeof *o);
  if (!o) return NULL;
  for (size_t i = 0; i < s->npaths; i++) o[i] = i;
  qsort_r(o, s->npaths, sizeof *o, by_total, (void *)s);
  return o;
}
