/*
 * merge.c — sorted sets of unique call paths (merge.h): building one rank's
 * set, merging two sets with their numbers, packing for transport.
 */
#include "merge.h"
#include <stdlib.h>
#include <string.h>
#include <math.h>

/* ---- numbers ---- */

void cp_pstat_from_rec(cp_pstat *s, const cp_path_rec *p, int rank) {
  memset(s, 0, sizeof *s);
  s->calls = p->calls; s->total_ns = p->total_ns; s->self_ns = p->self_ns;
  s->bytes = p->bytes; s->states = p->states; s->gpu_ns = p->gpu_ns;
  s->gpu_samples = p->gpu_samples; s->unterminated = p->unterminated;
  s->ev_min_ns = p->calls ? p->min_ns : UINT64_MAX;
  s->ev_max_ns = p->calls ? p->max_ns : 0;
  s->nranks = 1;
  s->tmin_ns = s->tmax_ns = p->total_ns;
  s->tmin_rank = s->tmax_rank = rank;
}

/* Same path twice in one rank (should not happen; the plugin's paths are
 * unique): add the numbers, the rank's total is their sum. */
static void pstat_add_same_rank(cp_pstat *into, const cp_pstat *from) {
  into->calls += from->calls; into->total_ns += from->total_ns;
  into->self_ns += from->self_ns; into->bytes += from->bytes;
  into->states += from->states; into->gpu_ns += from->gpu_ns;
  into->gpu_samples += from->gpu_samples; into->unterminated += from->unterminated;
  if (from->ev_min_ns < into->ev_min_ns) into->ev_min_ns = from->ev_min_ns;
  if (from->ev_max_ns > into->ev_max_ns) into->ev_max_ns = from->ev_max_ns;
  into->tmin_ns = into->tmax_ns = into->total_ns;
}

void cp_pstat_combine(cp_pstat *into, const cp_pstat *from) {
  into->calls += from->calls; into->total_ns += from->total_ns;
  into->self_ns += from->self_ns; into->bytes += from->bytes;
  into->states += from->states; into->gpu_ns += from->gpu_ns;
  into->gpu_samples += from->gpu_samples; into->unterminated += from->unterminated;
  if (from->ev_min_ns < into->ev_min_ns) into->ev_min_ns = from->ev_min_ns;
  if (from->ev_max_ns > into->ev_max_ns) into->ev_max_ns = from->ev_max_ns;
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

void cp_agg_combine(cp_agg *into, const cp_agg *f) {
  into->ranks_reported += f->ranks_reported;
  into->ranks_with_nccl += f->ranks_with_nccl;
  into->events_recorded += f->events_recorded;
  into->events_pxn += f->events_pxn;
  into->unterminated += f->unterminated;
  into->blacklist_evictions += f->blacklist_evictions;
  into->unknown_parent += f->unknown_parent;
  into->trace_dropped += f->trace_dropped;
  into->bad_calls += f->bad_calls;
  into->gpu_sampled_calls += f->gpu_sampled_calls;
  into->memory_bytes += f->memory_bytes;
  if (f->memory_max_bytes > into->memory_max_bytes) into->memory_max_bytes = f->memory_max_bytes;
  into->overhead_ns += f->overhead_ns;
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

/* ---- ordering ---- */

static int bytes_cmp(const char *a, uint32_t al, const char *b, uint32_t bl) {
  int c = memcmp(a, b, al < bl ? al : bl);
  if (c) return c;
  return al < bl ? -1 : al > bl;
}

int cp_mpath_cmp(const cp_mpath *a, const cp_mpath *b) {
  if (a->hash != b->hash) return a->hash < b->hash ? -1 : 1;
  return bytes_cmp(a->path, a->plen, b->path, b->plen);
}

static int mpath_qcmp(const void *x, const void *y) {
  return cp_mpath_cmp(x, y);
}
static int mhost_qcmp(const void *x, const void *y) {
  const cp_mhost *a = x, *b = y;
  return bytes_cmp(a->name, a->len, b->name, b->len);
}
static int mcomm_qcmp(const void *x, const void *y) {
  const cp_mcomm *a = x, *b = y;
  return a->comm_id < b->comm_id ? -1 : a->comm_id > b->comm_id;
}

/* ---- one rank ---- */

int cp_mset_from_rank(const cp_rank_data *r, int hash_bits, cp_mset *out,
                      uint32_t *local_to_idx) {
  memset(out, 0, sizeof *out);
  cp_agg *a = &out->agg;
  cp_agg_init(a);
  int rank = r->rank;
  a->ranks_reported = 1;
  a->ranks_with_nccl = r->ncomms > 0;
  a->events_recorded = r->events_recorded; a->events_pxn = r->events_pxn;
  a->unterminated = r->unterminated; a->blacklist_evictions = r->blacklist_evictions;
  a->unknown_parent = r->unknown_parent; a->trace_dropped = r->trace_dropped;
  a->bad_calls = r->bad_calls; a->gpu_sampled_calls = r->gpu_sampled_calls;
  a->memory_bytes = a->memory_max_bytes = r->memory_bytes;
  double ov = (double)r->events_recorded * r->per_event_cost_ns;
  a->overhead_ns = ov > 0 && isfinite(ov) ? (uint64_t)llround(ov) : 0;
  uint64_t rt = r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0;
  if (r->start_wall_ns) {
    a->start_wall_min_ns = r->start_wall_ns;
    a->end_wall_max_ns = r->start_wall_ns + (int64_t)rt;
  }
  a->runtime_max_ns = rt; a->runtime_max_rank = rank;
  a->nccl_version = r->nccl_version;
  a->event_mask_or = r->event_mask;
  a->bw_nranks = 0;
  for (size_t i = 0; i < r->ncomms; i++) {
    int n = r->comms[i].nranks;
    if (a->bw_nranks == 0) a->bw_nranks = n;
    else if (a->bw_nranks != n) a->bw_nranks = -1;
  }

  out->hosts = calloc(1, sizeof *out->hosts);
  out->comms = calloc(r->ncomms ? r->ncomms : 1, sizeof *out->comms);
  out->paths = calloc(r->npaths ? r->npaths : 1, sizeof *out->paths);
  uint32_t *order = calloc(r->npaths ? r->npaths : 1, sizeof *order);
  if (!out->hosts || !out->comms || !out->paths || !order) { free(order); cp_mset_free(out); return -1; }
  out->hosts[0].name = r->host; out->hosts[0].len = (uint32_t)strlen(r->host);
  out->hosts[0].ranks = 1; out->nhosts = 1;

  /* communicators: unique by id, several contexts of one comm add up */
  for (size_t i = 0; i < r->ncomms; i++) {
    cp_mcomm *c = &out->comms[i];
    c->comm_id = r->comms[i].comm_id;
    c->name = r->comms[i].comm_name; c->nlen = (uint32_t)strlen(c->name);
    c->nranks = r->comms[i].nranks; c->nnodes = r->comms[i].nnodes;
    c->members = 1; c->events = r->comms[i].events;
  }
  qsort(out->comms, r->ncomms, sizeof *out->comms, mcomm_qcmp);
  size_t nc = 0;
  for (size_t i = 0; i < r->ncomms; i++) {
    if (nc && out->comms[nc - 1].comm_id == out->comms[i].comm_id) {
      out->comms[nc - 1].members += out->comms[i].members;
      out->comms[nc - 1].events += out->comms[i].events;
    } else out->comms[nc++] = out->comms[i];
  }
  out->ncomms = nc;

  /* paths: sort a copy, remembering where each record went */
  cp_mpath *tmp = calloc(r->npaths ? r->npaths : 1, sizeof *tmp);
  if (!tmp) { free(order); cp_mset_free(out); return -1; }
  for (size_t i = 0; i < r->npaths; i++) {
    const cp_path_rec *p = &r->paths[i];
    cp_mpath *m = &tmp[i];
    m->hash = cp_hash_trunc(p->hash, hash_bits);
    m->path = p->path ? p->path : ""; m->plen = (uint32_t)strlen(m->path);
    m->leaf_type = p->leaf_type;
    m->func = p->leaf_func ? p->leaf_func : ""; m->flen = (uint32_t)strlen(m->func);
    cp_pstat_from_rec(&m->s, p, rank);
    /* stash the record index in a field that sorting carries along */
    order[i] = (uint32_t)i;
  }
  /* sort indices by their paths */
  {
    /* simple approach: sort an array of (mpath, idx) pairs */
    typedef struct { cp_mpath m; uint32_t idx; } pair;
    pair *pr = malloc((r->npaths ? r->npaths : 1) * sizeof *pr);
    if (!pr) { free(tmp); free(order); cp_mset_free(out); return -1; }
    for (size_t i = 0; i < r->npaths; i++) { pr[i].m = tmp[i]; pr[i].idx = (uint32_t)i; }
    qsort(pr, r->npaths, sizeof *pr, mpath_qcmp); /* cp_mpath is the first member */
    size_t np = 0;
    for (size_t i = 0; i < r->npaths; i++) {
      if (np && cp_mpath_cmp(&out->paths[np - 1], &pr[i].m) == 0)
        pstat_add_same_rank(&out->paths[np - 1].s, &pr[i].m.s);
      else out->paths[np++] = pr[i].m;
      if (local_to_idx) local_to_idx[pr[i].idx] = (uint32_t)(np - 1);
    }
    out->npaths = np;
    free(pr);
  }
  free(tmp);
  free(order);
  return 0;
}

void cp_mset_free(cp_mset *m) {
  free(m->hosts); free(m->comms); free(m->paths);
  memset(m, 0, sizeof *m);
}

/* ---- merge ---- */

int cp_mset_merge(const cp_mset *a, const cp_mset *b, cp_mset *out,
                  uint32_t *amap, uint32_t *bmap) {
  memset(out, 0, sizeof *out);
  out->agg = a->agg;
  cp_agg_combine(&out->agg, &b->agg);
  out->hosts = malloc((a->nhosts + b->nhosts + 1) * sizeof *out->hosts);
  out->comms = malloc((a->ncomms + b->ncomms + 1) * sizeof *out->comms);
  out->paths = malloc((a->npaths + b->npaths + 1) * sizeof *out->paths);
  if (!out->hosts || !out->comms || !out->paths) { cp_mset_free(out); return -1; }

  size_t i = 0, j = 0, n = 0;
  while (i < a->nhosts || j < b->nhosts) {
    int c = i == a->nhosts ? 1 : j == b->nhosts ? -1 : mhost_qcmp(&a->hosts[i], &b->hosts[j]);
    if (c < 0) out->hosts[n++] = a->hosts[i++];
    else if (c > 0) out->hosts[n++] = b->hosts[j++];
    else { out->hosts[n] = a->hosts[i++]; out->hosts[n++].ranks += b->hosts[j++].ranks; }
  }
  out->nhosts = n;

  i = j = n = 0;
  while (i < a->ncomms || j < b->ncomms) {
    int c = i == a->ncomms ? 1 : j == b->ncomms ? -1 : mcomm_qcmp(&a->comms[i], &b->comms[j]);
    if (c < 0) out->comms[n++] = a->comms[i++];
    else if (c > 0) out->comms[n++] = b->comms[j++];
    else {
      out->comms[n] = a->comms[i++];
      out->comms[n].members += b->comms[j].members;
      out->comms[n++].events += b->comms[j++].events;
    }
  }
  out->ncomms = n;

  i = j = n = 0;
  while (i < a->npaths || j < b->npaths) {
    int c = i == a->npaths ? 1 : j == b->npaths ? -1 : cp_mpath_cmp(&a->paths[i], &b->paths[j]);
    if (c < 0) { if (amap) amap[i] = (uint32_t)n; out->paths[n++] = a->paths[i++]; }
    else if (c > 0) { if (bmap) bmap[j] = (uint32_t)n; out->paths[n++] = b->paths[j++]; }
    else {
      if (amap) amap[i] = (uint32_t)n;
      if (bmap) bmap[j] = (uint32_t)n;
      out->paths[n] = a->paths[i++];
      cp_pstat_combine(&out->paths[n++].s, &b->paths[j++].s);
    }
  }
  out->npaths = n;
  return 0;
}

/* ---- pack / unpack ---- */

#define CP_MSET_MAGIC 0x4350534554310000ull /* "CPSET1" */

typedef struct { unsigned char *p; size_t len, cap; int err; } wbuf;

static void wput(wbuf *w, const void *src, size_t n) {
  if (w->err) return;
  if (w->len + n > w->cap) {
    size_t nc = w->cap ? w->cap * 2 : 4096;
    while (nc < w->len + n) nc *= 2;
    unsigned char *q = realloc(w->p, nc);
    if (!q) { w->err = 1; return; }
    w->p = q; w->cap = nc;
  }
  memcpy(w->p + w->len, src, n);
  w->len += n;
}
static void wu64(wbuf *w, uint64_t v) { wput(w, &v, 8); }
/* LEB128: most counts and ns values take 1-5 bytes instead of 8 */
static void wvar(wbuf *w, uint64_t v) {
  unsigned char b[10];
  int n = 0;
  do { b[n] = (unsigned char)(v & 0x7f); v >>= 7; if (v) b[n] |= 0x80; n++; } while (v);
  wput(w, b, (size_t)n);
}
static size_t var_len(uint64_t v) { size_t n = 1; while (v >>= 7) n++; return n; }
/* the numbers of a path, in a fixed order; ranks and sentinels shifted so
 * -1 / UINT64_MAX stay small */
#define PSTAT_FIELDS(X, s) \
  X((s)->calls) X((s)->total_ns) X((s)->self_ns) X((s)->bytes) X((s)->states) X((s)->gpu_ns) \
  X((s)->gpu_samples) X((s)->unterminated) X((s)->ev_min_ns + 1) X((s)->ev_max_ns) X((s)->nranks) \
  X((s)->tmin_ns) X((uint64_t)((int64_t)(s)->tmin_rank + 1)) X((s)->tmax_ns) \
  X((uint64_t)((int64_t)(s)->tmax_rank + 1))
static size_t pstat_len(const cp_pstat *s) {
  size_t n = 0;
#define LEN(v) n += var_len(v);
  PSTAT_FIELDS(LEN, s)
#undef LEN
  return n;
}
static void wpstat(wbuf *w, const cp_pstat *s) {
#define PUT(v) wvar(w, v);
  PSTAT_FIELDS(PUT, s)
#undef PUT
}
static void wu32(wbuf *w, uint32_t v) { wput(w, &v, 4); }

int cp_mset_pack(const cp_mset *m, unsigned char **buf, size_t *len) {
  wbuf w = {0};
  /* size estimate avoids most reallocations */
  size_t est = 64 + sizeof(cp_agg) + m->npaths * (sizeof(cp_mpath) + 64);
  w.p = malloc(est); w.cap = w.p ? est : 0;
  wu64(&w, CP_MSET_MAGIC);
  wu64(&w, m->nhosts); wu64(&w, m->ncomms); wu64(&w, m->npaths);
  wput(&w, &m->agg, sizeof m->agg);
  for (size_t i = 0; i < m->nhosts; i++) {
    wu64(&w, m->hosts[i].ranks); wu32(&w, m->hosts[i].len);
    wput(&w, m->hosts[i].name, m->hosts[i].len);
  }
  for (size_t i = 0; i < m->ncomms; i++) {
    const cp_mcomm *c = &m->comms[i];
    wu64(&w, c->comm_id); wu64(&w, c->members); wu64(&w, c->events);
    wu32(&w, (uint32_t)c->nranks); wu32(&w, (uint32_t)c->nnodes);
    wu32(&w, c->nlen); wput(&w, c->name, c->nlen);
  }
  for (size_t i = 0; i < m->npaths; i++) {
    const cp_mpath *p = &m->paths[i];
    wu64(&w, p->hash);
    wpstat(&w, &p->s);
    wvar(&w, p->leaf_type); wvar(&w, p->plen); wvar(&w, p->flen);
    wput(&w, p->path, p->plen); wput(&w, p->func, p->flen);
  }
  if (w.err) { free(w.p); return -1; }
  *buf = w.p; *len = w.len;
  return 0;
}

size_t cp_mset_packed_size(const cp_mset *m) {
  size_t n = 32 + sizeof m->agg;
  for (size_t i = 0; i < m->nhosts; i++) n += 12 + m->hosts[i].len;
  for (size_t i = 0; i < m->ncomms; i++) n += 36 + m->comms[i].nlen;
  for (size_t i = 0; i < m->npaths; i++) {
    const cp_mpath *p = &m->paths[i];
    n += 8 + pstat_len(&p->s) + var_len(p->leaf_type) + var_len(p->plen) + var_len(p->flen) + p->plen + p->flen;
  }
  return n;
}

typedef struct { const unsigned char *p; size_t len, off; int err; } rbuf;
static const void *rget(rbuf *r, size_t n) {
  if (r->err || r->len - r->off < n) { r->err = 1; return NULL; }
  const void *q = r->p + r->off; r->off += n; return q;
}
static uint64_t ru64(rbuf *r) { uint64_t v = 0; const void *q = rget(r, 8); if (q) memcpy(&v, q, 8); return v; }
static uint32_t ru32(rbuf *r) { uint32_t v = 0; const void *q = rget(r, 4); if (q) memcpy(&v, q, 4); return v; }
static uint64_t rvar(rbuf *r) {
  uint64_t v = 0;
  for (int sh = 0; sh < 70; sh += 7) {
    const unsigned char *b = rget(r, 1);
    if (!b) return 0;
    v |= (uint64_t)(*b & 0x7f) << sh;
    if (!(*b & 0x80)) return v;
  }
  r->err = 1;
  return 0;
}
static void rpstat(rbuf *r, cp_pstat *s) {
  s->calls = rvar(r); s->total_ns = rvar(r); s->self_ns = rvar(r); s->bytes = rvar(r);
  s->states = rvar(r); s->gpu_ns = rvar(r); s->gpu_samples = rvar(r); s->unterminated = rvar(r);
  s->ev_min_ns = rvar(r) - 1; s->ev_max_ns = rvar(r); s->nranks = (uint32_t)rvar(r);
  s->tmin_ns = rvar(r); s->tmin_rank = (int32_t)((int64_t)rvar(r) - 1);
  s->tmax_ns = rvar(r); s->tmax_rank = (int32_t)((int64_t)rvar(r) - 1);
}

int cp_mset_unpack(const unsigned char *buf, size_t len, cp_mset *out) {
  memset(out, 0, sizeof *out);
  rbuf r = {buf, len, 0, 0};
  if (ru64(&r) != CP_MSET_MAGIC) return -1;
  uint64_t nh = ru64(&r), nc = ru64(&r), np = ru64(&r);
  if (r.err || nh > len || nc > len || np > len) return -1;
  const void *q = rget(&r, sizeof out->agg);
  if (!q) return -1;
  memcpy(&out->agg, q, sizeof out->agg);
  out->hosts = calloc(nh + 1, sizeof *out->hosts);
  out->comms = calloc(nc + 1, sizeof *out->comms);
  out->paths = calloc(np + 1, sizeof *out->paths);
  if (!out->hosts || !out->comms || !out->paths) { cp_mset_free(out); return -1; }
  for (uint64_t i = 0; i < nh && !r.err; i++) {
    cp_mhost *h = &out->hosts[i];
    h->ranks = ru64(&r); h->len = ru32(&r); h->name = rget(&r, h->len);
  }
  for (uint64_t i = 0; i < nc && !r.err; i++) {
    cp_mcomm *c = &out->comms[i];
    c->comm_id = ru64(&r); c->members = ru64(&r); c->events = ru64(&r);
    c->nranks = (int32_t)ru32(&r); c->nnodes = (int32_t)ru32(&r);
    c->nlen = ru32(&r); c->name = rget(&r, c->nlen);
  }
  for (uint64_t i = 0; i < np && !r.err; i++) {
    cp_mpath *p = &out->paths[i];
    p->hash = ru64(&r);
    rpstat(&r, &p->s);
    p->leaf_type = (uint32_t)rvar(&r); p->plen = (uint32_t)rvar(&r); p->flen = (uint32_t)rvar(&r);
    p->path = rget(&r, p->plen); p->func = rget(&r, p->flen);
  }
  if (r.err || r.off != len) { cp_mset_free(out); return -1; }
  out->nhosts = nh; out->ncomms = nc; out->npaths = np;
  return 0;
}
