/*
 * reduce.c — the global set becomes a cp_summary (reduce.h).
 */
#include "reduce.h"
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

typedef struct { char *p; size_t len, cap; } arena;

static const char *arena_put(arena *a, const char *s, size_t n) {
  char *q = a->p + a->len;
  memcpy(q, s, n); q[n] = 0;
  a->len += n + 1;
  return q;
}

int cp_summary_build(const cp_mset *g, const cp_rank_data *cfg, int world_size,
                     int hash_bits, cp_summary *out) {
  memset(out, 0, sizeof *out);
  out->world_size = world_size;
  out->agg = g->agg;
  out->hash_bits = hash_bits;
  out->config_rank = -1;
  if (cfg) {
    out->config_rank = cfg->rank;
    snprintf(out->command, sizeof out->command, "%s", cfg->command ? cfg->command : "");
    out->event_mask = cfg->event_mask;
    out->gpu_sample = cfg->gpu_sample;
    out->trace_on = cfg->trace_on;
    snprintf(out->periods, sizeof out->periods, "%s", cfg->periods);
    out->per_event_cost_ns = cfg->per_event_cost_ns;
  }
  size_t total = 1;
  for (size_t i = 0; i < g->nhosts; i++) total += g->hosts[i].len + 1;
  for (size_t i = 0; i < g->ncomms; i++) total += g->comms[i].nlen + 1;
  for (size_t i = 0; i < g->npaths; i++) total += g->paths[i].plen + g->paths[i].flen + 2;
  arena a = {malloc(total), 0, total};
  out->hosts = calloc(g->nhosts + 1, sizeof *out->hosts);
  out->comms = calloc(g->ncomms + 1, sizeof *out->comms);
  out->paths = calloc(g->npaths + 1, sizeof *out->paths);
  out->owner = a.p;
  if (!a.p || !out->hosts || !out->comms || !out->paths) { cp_summary_free(out); return -1; }
  for (size_t i = 0; i < g->nhosts; i++) {
    out->hosts[i].name = arena_put(&a, g->hosts[i].name, g->hosts[i].len);
    out->hosts[i].ranks = g->hosts[i].ranks;
  }
  out->nhosts = g->nhosts;
  for (size_t i = 0; i < g->ncomms; i++) {
    const cp_mcomm *c = &g->comms[i];
    cp_comm_sum *d = &out->comms[i];
    d->comm_id = c->comm_id; d->name = arena_put(&a, c->name, c->nlen);
    d->nranks = c->nranks; d->nnodes = c->nnodes; d->members = c->members; d->events = c->events;
  }
  out->ncomms = g->ncomms;
  for (size_t i = 0; i < g->npaths; i++) {
    const cp_mpath *p = &g->paths[i];
    cp_gpath *d = &out->paths[i];
    d->id = (int64_t)i; d->hash = p->hash;
    d->path = arena_put(&a, p->path, p->plen);
    d->leaf_func = arena_put(&a, p->func, p->flen);
    d->leaf_type = p->leaf_type;
    d->s = p->s;
  }
  out->npaths = g->npaths;
  cp_summary_finish(out);
  return 0;
}

static int starts(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static void bandwidth(const cp_summary *s, cp_gpath *p) {
  const cp_pstat *st = &p->s;
  p->bw_valid = 0; p->algbw_gbs = p->busbw_gbs = 0;
  if (!st->calls || !st->bytes) return;
  int coll = p->leaf_type == 2, p2p = p->leaf_type == 4;
  if (!coll && !p2p) return;
  double t = st->gpu_samples ? (double)st->gpu_ns / (double)st->gpu_samples
                             : (double)st->total_ns / (double)st->calls;
  if (t <= 0) return;
  double bytes = (double)st->bytes / (double)st->calls;   /* per call and rank */
  double factor = 1;
  if (coll) {
    int n = s->agg.bw_nranks;
    if (n <= 0) return;
    const char *f = p->leaf_func;
    if (starts(f, "AllReduce")) factor = 2.0 * (n - 1) / n;
    else if (starts(f, "AllGather")) { bytes *= n; factor = (double)(n - 1) / n; }
    else if (starts(f, "ReduceScatter")) { bytes *= n; factor = (double)(n - 1) / n; }
    else if (starts(f, "AlltoAll") || starts(f, "AllToAll")) factor = (double)(n - 1) / n;
    else factor = 1;
  }
  p->algbw_gbs = bytes / t;              /* bytes per ns = GB/s */
  p->busbw_gbs = p->algbw_gbs * factor;
  p->bw_valid = 1;
}

void cp_summary_finish(cp_summary *s) {
  uint64_t self_total = 0;
  for (size_t i = 0; i < s->npaths; i++) self_total += s->paths[i].s.self_ns;
  s->self_total_ns = self_total;
  s->ncollisions = 0;
  for (size_t i = 0; i < s->npaths; i++) {
    cp_gpath *p = &s->paths[i];
    const cp_pstat *st = &p->s;
    int before = i > 0 && s->paths[i - 1].hash == p->hash;
    int after = i + 1 < s->npaths && s->paths[i + 1].hash == p->hash;
    p->collides = before || after;
    if (after && !before) s->ncollisions++;
    p->avg_ns = st->nranks ? (double)st->total_ns / st->nranks : 0;
    double dmax = (double)st->tmax_ns - p->avg_ns, dmin = p->avg_ns - (double)st->tmin_ns;
    if (p->avg_ns > 0 && dmin > dmax) {
      p->imbalance_pct = -100.0 * dmin / p->avg_ns; p->imbalance_rank = st->tmin_rank;
    } else {
      p->imbalance_pct = p->avg_ns > 0 ? 100.0 * dmax / p->avg_ns : 0;
      p->imbalance_rank = st->tmax_rank;
    }
    p->self_pct = self_total ? 100.0 * (double)st->self_ns / (double)self_total : 0;
    p->call_avg_ns = st->calls ? (double)st->total_ns / (double)st->calls : 0;
    if (p->leaf_type == 64) {            /* KernelCh: every event has its GPU time */
      p->gpu_est_ns = (double)st->gpu_ns; p->gpu_exact = st->gpu_samples > 0;
    } else if (st->gpu_samples) {
      p->gpu_exact = st->gpu_samples == st->calls;
      p->gpu_est_ns = p->gpu_exact ? (double)st->gpu_ns
                                   : (double)st->gpu_ns / (double)st->gpu_samples * (double)st->calls;
    } else { p->gpu_est_ns = 0; p->gpu_exact = 0; }
    bandwidth(s, p);
  }
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
