/*
 * snapshot.c — collprof_snapshot -> cp_rank_data (snapshot.h).
 */
#include "snapshot.h"
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

/* From the plugin (libcollprof.so), which the MPI layer links; weak, so
 * that a tool linking this library without the plugin still links (no
 * size classes then). */
__attribute__((weak)) size_t collprof_path_size_classes(const collprof_path_stat *p, collprof_size_class *out);

/* A path's message-size classes, as a rank file's "gpuSizes" holds them. */
static int sizes_from(const collprof_path_stat *p, cp_path_rec *d) {
  collprof_size_class c[COLLPROF_SIZE_CLASSES];
  const size_t n = collprof_path_size_classes && p->gpu_classes ? collprof_path_size_classes(p, c) : 0;
  if (!n) return 0;
  d->sizes = calloc(n, sizeof *d->sizes);
  if (!d->sizes) return -1;
  for (size_t i = 0; i < n; i++) {
    const collprof_size_class *e = &c[i];
    d->sizes[i] = (cp_size_rec){e->lo, e->calls, e->samples, e->first_samples, e->ns, e->first_ns, e->max_ns,
                                e->est_ns, e->est_calls, e->outliers, e->outlier_ns, e->lent, 1};
  }
  d->nsizes = n;
  return 0;
}

int cp_rank_from_snapshot(const collprof_snapshot *s, const char *command, cp_rank_data *r) {
  memset(r, 0, sizeof *r);
  r->has_rank_rec = 1;
  r->rank = s->world_rank; r->world_size = s->world_size; r->pid = s->pid;
  snprintf(r->host, sizeof r->host, "%s", s->host);
  /* the rank record's startWall has microseconds: keep what a file would keep */
  r->start_wall_ns = s->start_wall_ns / 1000 * 1000;
  r->start_ns = s->start_mono_ns; r->end_ns = s->end_mono_ns;
  r->event_mask = s->event_mask; r->gpu_sample = s->gpu_sample; r->trace_on = s->trace_on;
  r->gpu_sample_small = s->gpu_sample_small; r->gpu_sample_small_bytes = s->gpu_sample_small_bytes;
  r->gpu_sample_delay_ms = (int)s->gpu_sample_delay_ms;
  r->gpu_sample_delay_auto = s->gpu_sample_delay_auto;
  r->nccl_version = s->nccl_version;
  snprintf(r->periods, sizeof r->periods, "%s", s->periods);
  snprintf(r->windows, sizeof r->windows, "%s", s->windows);
#define COPY(f) r->f = s->f;
  CP_RUN_COUNTERS(COPY)
#undef COPY
  r->cost_callbacks = s->cost_callbacks; r->cost_windows = s->cost_windows;
  r->cost_window_ns = s->cost_window_ns; r->cost_span_ns = s->cost_span_ns;
  r->cost_est_ns = s->cost_est_ns;
  r->cost_setup_ns = s->cost_setup_ns;
  r->cost_err_ns = s->cost_err_ns;
  /* bounded: the snapshot's array need not end in a NUL */
  snprintf(r->mask_frozen, sizeof r->mask_frozen, "%.*s", (int)sizeof s->mask_frozen, s->mask_frozen);
  r->memory_bytes = s->memory_bytes;
  /* the rank record carries the cost with one decimal: use what a reader
   * of the file gets, so online and offline overheads agree */
  char cost[64];
  snprintf(cost, sizeof cost, "%.1f", s->per_event_cost_ns == s->per_event_cost_ns ? s->per_event_cost_ns : 0.0);
  r->per_event_cost_ns = strtod(cost, NULL);
  r->command = strdup(command ? command : "");
  r->comms = calloc(s->ncomms + 1, sizeof *r->comms);
  r->paths = calloc(s->npaths + 1, sizeof *r->paths);
  if (!r->command || !r->comms || !r->paths) { cp_rank_data_free(r); return -1; }
  for (size_t i = 0; i < s->ncomms; i++) {
    const collprof_comm_info *c = &s->comms[i];
    cp_comm_rec *d = &r->comms[i];
    d->comm_id = c->comm_id;
    snprintf(d->comm_name, sizeof d->comm_name, "%s", c->comm_name);
    d->nranks = c->nranks; d->nnodes = c->nnodes; d->nccl_rank = c->nccl_rank;
    snprintf(d->gpu_uuid, sizeof d->gpu_uuid, "%s", c->gpu_uuid);
    d->events = c->events;
    d->gpu_offset_ns = c->gpu_offset_ns; d->gpu_offset_valid = c->gpu_offset_valid;
  }
  r->ncomms = s->ncomms;
  for (size_t i = 0; i < s->npaths; i++) {
    const collprof_path_stat *p = &s->paths[i];
    cp_path_rec *d = &r->paths[i];
    d->id = -1; d->local = p->local_id; d->hash = p->hash;
    d->path = strdup(p->path ? p->path : "");
    d->leaf_func = strdup(p->leaf_func ? p->leaf_func : "");
    r->npaths = i + 1;
    if (!d->path || !d->leaf_func) { cp_rank_data_free(r); return -1; }
    d->leaf_type = p->leaf_type;
    d->calls = p->calls; d->total_ns = p->total_ns; d->self_ns = p->self_ns;
    d->min_ns = p->min_ns; d->max_ns = p->max_ns; d->bytes = p->bytes; d->states = p->states;
    d->gpu_ns = p->gpu_ns; d->gpu_samples = p->gpu_samples; d->unterminated = p->unterminated;
    d->gpu_first_ns = p->gpu_first_ns; d->gpu_first_samples = p->gpu_first_samples;
    d->has_est = 1;
    d->gpu_est_ns = p->gpu_est_ns; d->gpu_est_calls = p->gpu_est_calls; d->gpu_outliers = p->gpu_outliers;
    d->gpu_borrowed_calls = p->gpu_borrowed_calls;
    d->gpu_launch_ns = p->gpu_launch_ns; d->gpu_launch_samples = p->gpu_launch_samples;
    d->gpu_launch_calls = p->gpu_launch_calls; d->has_launch_calls = p->leaf_type == 2 || p->leaf_type == 4;   /* Coll, P2p */
    d->untimed_calls = p->untimed_calls;
    d->unseen_calls = p->unseen_calls;
    if (sizes_from(p, d) != 0) { cp_rank_data_free(r); return -1; }
  }
  return 0;
}
