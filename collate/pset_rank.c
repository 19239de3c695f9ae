/*
 * pset_rank.c — one rank's packed set (pset.h): its run counters as the
 * set's cp_agg, its paths ordered by (hash, path bytes) with equal strings
 * combined, its hosts and communicators; and the empty set of a rank that
 * cannot take part.
 */
#include "pset_codec.h"
#include "reduce.h"
#include <stdlib.h>
#include <math.h>

static void agg_from_rank(const cp_rank_data *r, cp_agg *a) {
  cp_agg_init(a);
  a->ranks_reported = 1;
  a->ranks_with_nccl = r->ncomms > 0;
#define COPY(f) a->f = r->f;
  CP_RUN_COUNTERS(COPY)
#undef COPY
  a->memory_bytes = a->memory_max_bytes = r->memory_bytes;
  const uint64_t events = r->events_recorded + r->events_counted;
  if (r->cost_windows > 0 && r->cost_callbacks > 0) {   /* timed in situ (src/cost_sample.c) */
    a->insitu_ns = r->cost_est_ns;
    a->insitu_setup_ns = r->cost_setup_ns;
    a->insitu_events = events;
    a->overhead_insitu_ranks = 1;
    a->cost_callbacks = r->cost_callbacks; a->cost_windows = r->cost_windows;
    a->cost_window_ns = r->cost_window_ns; a->cost_span_ns = r->cost_span_ns;
    if (r->cost_err_ns >= 0) a->cost_err_var = (double)r->cost_err_ns * (double)r->cost_err_ns;
    else a->cost_err_unknown = 1;
  } else {   /* the start-up figure, or one borrowed (merge.c); the set-ups timed whole (src/oneoff.h) */
    double ov = (double)r->events_recorded * r->per_event_cost_ns;
    a->fallback_ranks = 1;
    a->fallback_events = events;
    a->fallback_setup_ns = r->cost_setup_ns;
    a->fallback_startup_ns = ov > 0 && isfinite(ov) ? (uint64_t)llround(ov) : 0;
  }
  a->cost_setup_ns = r->cost_setup_ns;
  cp_agg_settle_overhead(a);
  uint64_t rt = r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
  if (r->start_wall_ns) {
    a->start_wall_min_ns = r->start_wall_ns;
    a->end_wall_max_ns = r->start_wall_ns + (int64_t)rt;
  }
  a->runtime_max_ns = rt; a->runtime_max_rank = r->rank;
  a->nccl_version = r->nccl_version;
  a->event_mask_or = r->event_mask;
  a->bw_nranks = 0;
  for (size_t i = 0; i < r->ncomms; i++) {
    int n = r->comms[i].nranks;
    if (a->bw_nranks == 0) a->bw_nranks = n;
    else if (a->bw_nranks != n) a->bw_nranks = -1;
  }
}

/* Same path twice in one rank (the plugin's paths are unique; files may
 * not be): add the numbers, the rank's total is their sum. */
static void pstat_add_same_rank(cp_pstat *into, const cp_pstat *from) {
  cp_pstat_add(into, from);
  into->tmin_ns = into->tmax_ns = into->total_ns;
}

typedef struct { uint64_t hash; uint32_t idx, plen, flen; } rkey;
static int rkey_cmp(const rkey *a, const rkey *b, const cp_path_rec *p) {
  if (a->hash != b->hash) return a->hash < b->hash ? -1 : 1;
  const char *pa = p[a->idx].path ? p[a->idx].path : "", *pb = p[b->idx].path ? p[b->idx].path : "";
  return strcmp(pa, pb);
}

/* Sort by hash: LSD radix, 8 bits a pass, passes where every key has the
 * same byte skipped; then runs of one hash by string (insertion sort: such
 * runs are collisions or duplicates, short). */
static int rkeys_sort(rkey *k, size_t n, const cp_path_rec *p) {
  rkey *tmp = malloc((n + 1) * sizeof *tmp);
  if (!tmp) return -1;
  for (int sh = 0; sh < 64; sh += 8) {
    size_t cnt[256] = {0};
    for (size_t i = 0; i < n; i++) cnt[(k[i].hash >> sh) & 255]++;
    if (n && cnt[(k[0].hash >> sh) & 255] == n) continue;
    size_t pos = 0;
    for (int d = 0; d < 256; d++) { size_t c = cnt[d]; cnt[d] = pos; pos += c; }
    for (size_t i = 0; i < n; i++) tmp[cnt[(k[i].hash >> sh) & 255]++] = k[i];
    memcpy(k, tmp, n * sizeof *k);
  }
  free(tmp);
  for (size_t i = 1; i < n; i++) {
    if (k[i].hash != k[i - 1].hash) continue;
    rkey x = k[i];
    size_t j = i;
    while (j > 0 && k[j - 1].hash == x.hash && rkey_cmp(&k[j - 1], &x, p) > 0) { k[j] = k[j - 1]; j--; }
    k[j] = x;
  }
  return 0;
}

int cp_pset_empty(cp_pbuf *out) {
  cp_agg a;
  cp_agg_init(&a);
  if (cp_pbuf_alloc(out, cp_pset_hdr_size(0, NULL, 0, NULL, NULL, 0))) return -1;
  wr w = {out->p, 0, out->cap, 0};
  cp_pset_hdr_put(&w, 0, &a, NULL, 0, NULL, 0, NULL, 0);
  cp_pset_hdr_patch(&w, 0);
  out->len = w.len;
  return w.err ? -1 : 0;
}

int cp_pset_from_rank(const cp_rank_data *r, int hash_bits, cp_pbuf *out, uint32_t *l2i) {
  memset(out, 0, sizeof *out);
  size_t n = r->npaths;
  cp_agg a;
  agg_from_rank(r, &a);
  cp_mhost host = {r->host, (uint32_t)strnlen(r->host, sizeof r->host), 1};
  cp_frz fz;
  int nf = cp_frz_from_rank(r, &fz);
  cp_mcomm *cs = calloc(r->ncomms + 1, sizeof *cs);
  rkey *k = malloc((n + 1) * sizeof *k);
  if (!cs || !k || nf < 0) { free(cs); free(k); if (nf > 0) cp_frz_free(&fz, 1); return -1; }
  for (size_t i = 0; i < r->ncomms; i++) {
    cp_mcomm *c = &cs[i];
    c->comm_id = r->comms[i].comm_id;
    c->name = r->comms[i].comm_name; c->nlen = (uint32_t)strnlen(c->name, sizeof r->comms[i].comm_name);
    c->nranks = r->comms[i].nranks; c->nnodes = r->comms[i].nnodes;
    c->members = 1; c->events = r->comms[i].events;
  }
  size_t nc = cp_pset_comms_unique(cs, r->ncomms);
  size_t cap = cp_pset_hdr_size(1, &host, nc, cs, &fz, (size_t)nf);
  for (size_t i = 0; i < n; i++) {
    const cp_path_rec *p = &r->paths[i];
    k[i].hash = cp_hash_trunc(p->hash, hash_bits); k[i].idx = (uint32_t)i;
    k[i].plen = p->path ? (uint32_t)strlen(p->path) : 0;
    k[i].flen = p->leaf_func ? (uint32_t)strlen(p->leaf_func) : 0;
    cap += 8 + 10 + 10 + k[i].plen + 1 + 10 + k[i].flen + 1 + 10 + PSTAT_MAX;
    if (p->nsizes) cap += CLS_MAX;   /* (same path twice in a rank: its classes add into one list) */
  }
  if (rkeys_sort(k, n, r->paths) || cp_pbuf_alloc(out, cap)) {
    free(cs); free(k); cp_frz_free(&fz, (size_t)nf);
    return -1;
  }
  wr w = {out->p, 0, out->cap, 0};
  cp_pset_hdr_put(&w, 0, &a, &host, 1, cs, nc, &fz, (size_t)nf);
  cp_frz_free(&fz, (size_t)nf);
  uint64_t np = 0;
  for (size_t i = 0; i < n;) {
    const cp_path_rec *p = &r->paths[k[i].idx];
    const char *path = p->path ? p->path : "", *func = p->leaf_func ? p->leaf_func : "";
    uint32_t lt = p->leaf_type, flen = k[i].flen;
    cp_pstat s;
    cp_pstat_from_rec(&s, p, r->rank);
    cp_size_sum cls[CP_SIZE_CLASSES];
    int has_cls = 0;
    if (p->nsizes) {   /* (cleared only where used: most paths have no classes) */
      memset(cls, 0, sizeof cls);
      has_cls = cp_size_add_rec(cls, p);
    }
    size_t j = i + 1;
    for (; j < n && k[j].hash == k[i].hash && rkey_cmp(&k[i], &k[j], r->paths) == 0; j++) {
      const cp_path_rec *q = &r->paths[k[j].idx];
      cp_pstat t;
      cp_pstat_from_rec(&t, q, r->rank);
      pstat_add_same_rank(&s, &t);
      if (q->nsizes) {
        if (!has_cls) memset(cls, 0, sizeof cls);
        has_cls |= cp_size_add_rec(cls, q);
      }
      const char *qf = q->leaf_func ? q->leaf_func : "";
      if (desc_less(q->leaf_type, (const unsigned char *)qf, k[j].flen, lt, (const unsigned char *)func, flen)) {
        lt = q->leaf_type; func = qf; flen = k[j].flen;
      }
    }
    rec_put(&w, k[i].hash, (const unsigned char *)path, k[i].plen, (const unsigned char *)func, flen, lt, &s,
            has_cls ? cls : NULL);
    for (; i < j; i++) if (l2i) l2i[k[i].idx] = (uint32_t)np;
    np++;
  }
  cp_pset_hdr_patch(&w, np);
  out->len = w.len;
  free(cs); free(k);
  if (w.err) { cp_pbuf_free(out); return -1; }
  return 0;
}
