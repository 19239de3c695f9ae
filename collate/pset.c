/*
 * pset.c — packed path sets (pset.h): buffers, one rank's set, the k-way
 * merge into a packed set or into the summary.
 */
#include "pset.h"
#include "frozen.h"
#include "reduce.h"
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

#define PSET_MAGIC 0x4350534554340000ull /* "CPSET4" */
#define BIG ((size_t)64 << 10)            /* mmap from here; release in steps of this */

/* ---- buffers ---- */

static int pbuf_alloc(cp_pbuf *b, size_t cap, int flags) {
  memset(b, 0, sizeof *b);
  if (cap < 64) cap = 64;
  void *p;
  if (cap >= BIG) {
    p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (p == MAP_FAILED) p = NULL;
  } else p = malloc(cap);
  if (!p) return -1;
  b->p = p; b->cap = cap;
  return 0;
}

int cp_pbuf_alloc(cp_pbuf *b, size_t cap) { return pbuf_alloc(b, cap, 0); }
/* one call maps every page: cheaper than a fault per page */
int cp_pbuf_alloc_full(cp_pbuf *b, size_t cap) { return pbuf_alloc(b, cap, MAP_POPULATE); }

void cp_pbuf_free(cp_pbuf *b) {
  if (b->p) { if (b->cap >= BIG) munmap(b->p, b->cap); else free(b->p); }
  memset(b, 0, sizeof *b);
}

/* Give back the pages below off: the merge never reads them again. */
static void pbuf_release_below(cp_pbuf *b, const unsigned char *at) {
  if (b->cap < BIG) return;
  static size_t pg;
  if (!pg) pg = (size_t)sysconf(_SC_PAGESIZE);
  size_t off = (size_t)(at - b->p);
  size_t to = off / pg * pg;
  if (to >= b->released + BIG) {
    madvise(b->p + b->released, to - b->released, MADV_DONTNEED);
    b->released = to;
  }
}

/* ---- bytes ---- */

typedef struct { unsigned char *p; size_t len, cap; int err; } wr;
static inline void put(wr *w, const void *s, size_t n) {
  if (w->err || w->cap - w->len < n) { w->err = 1; return; }
  memcpy(w->p + w->len, s, n);
  w->len += n;
}
static inline size_t varenc(unsigned char *b, uint64_t v) {
  size_t n = 0;
  do { b[n] = (unsigned char)(v & 0x7f); v >>= 7; if (v) b[n] |= 0x80; n++; } while (v);
  return n;
}
static inline size_t varlen(uint64_t v) { size_t n = 1; while (v >>= 7) n++; return n; }
static inline void putvar(wr *w, uint64_t v) { unsigned char b[10]; put(w, b, varenc(b, v)); }
static inline void put64(wr *w, uint64_t v) { put(w, &v, 8); }
static inline void put32(wr *w, uint32_t v) { put(w, &v, 4); }

typedef struct { const unsigned char *p, *end; int err; } rd;
static inline const unsigned char *get(rd *r, size_t n) {
  if (r->err || (size_t)(r->end - r->p) < n) { r->err = 1; return NULL; }
  const unsigned char *q = r->p;
  r->p += n;
  return q;
}
static uint64_t getvar_long(rd *r) {
  uint64_t v = 0;
  for (int sh = 0; sh < 70 && r->p < r->end; sh += 7) {
    unsigned b = *r->p++;
    v |= (uint64_t)(b & 0x7f) << sh;
    if (!(b & 0x80)) return v;
  }
  r->err = 1;
  return 0;
}
/* Most varints of a set are below 128 (lengths, types, small counts): one
 * byte, the case inlined. */
static inline uint64_t getvar(rd *r) {
  if (__builtin_expect(r->p < r->end && *r->p < 0x80, 1)) return *r->p++;
  return getvar_long(r);
}
static inline uint64_t get64(rd *r) { uint64_t v = 0; const unsigned char *q = get(r, 8); if (q) memcpy(&v, q, 8); return v; }
static inline uint32_t get32(rd *r) { uint32_t v = 0; const unsigned char *q = get(r, 4); if (q) memcpy(&v, q, 4); return v; }

/* The numbers of a path in a fixed order, sentinels shifted to stay small;
 * packed as a bitmap of the fields that are not 0, then those fields'
 * varints.  Most of a path's 26 numbers are 0 (GPU numbers on all but
 * Coll/P2p and KernelCh paths, unterminated and untimed calls, ...), and
 * rank 0 decodes every input record's numbers: at 64 ranks x 2000 paths
 * 26 varints each took 44% of its collation (callgrind). */
#define PSTAT_FIELDS(X, s) \
  X((s)->calls) X((s)->total_ns) X((s)->self_ns) X((s)->bytes) X((s)->states) X((s)->gpu_ns) \
  X((s)->gpu_samples) X((s)->unterminated) X((s)->ev_min_ns + 1) X((s)->ev_max_ns) X((s)->nranks) \
  X((s)->tmin_ns) X((uint64_t)((int64_t)(s)->tmin_rank + 1)) X((s)->tmax_ns) \
  X((uint64_t)((int64_t)(s)->tmax_rank + 1)) X((s)->gpu_first_ns) X((s)->gpu_first_samples) \
  X((s)->gpu_est_ns) X((s)->gpu_est_calls) X((s)->gpu_outliers) X((s)->gpu_launch_ns) \
  X((s)->gpu_launch_samples) X((s)->gpu_launch_calls) X((s)->untimed_calls) X((s)->unseen_calls) \
  X((s)->gpu_borrowed_calls)
#define PSTAT_N 26
#define PSTAT_COUNT1(v) +1
_Static_assert(0 PSTAT_FIELDS(PSTAT_COUNT1, (cp_pstat *)0) == PSTAT_N, "PSTAT_N counts PSTAT_FIELDS");
#define PSTAT_MAX (4 + PSTAT_N * 10)   /* the bitmap (26 bits), every field of 10 bytes */
static size_t pstat_enc(unsigned char *b, const cp_pstat *s) {
  /* the fields after a 4-byte hole for the bitmap, which is then moved up
   * to its own length (1-4 bytes) */
  unsigned char *f = b + 4;
  size_t n = 0;
  uint32_t present = 0, bit = 1;
#define ENC(x) { const uint64_t v_ = (x); if (v_) { present |= bit; n += varenc(f + n, v_); } bit <<= 1; }
  PSTAT_FIELDS(ENC, s)
#undef ENC
  const size_t h = varenc(b, present);
  memmove(b + h, f, n);
  return h + n;
}
/* One varint where at least 10 bytes remain: no bound test (*bad set for
 * one longer than 10 bytes, as getvar would fail it). */
static inline uint64_t getvar_in(const unsigned char **pp, int *bad) {
  const unsigned char *p = *pp;
  uint64_t v = *p++;
  if (v >= 0x80) {
    v &= 0x7f;
    unsigned b;
    int sh = 7;
    do {
      b = *p++;
      v |= (uint64_t)(b & 0x7f) << sh;
      sh += 7;
    } while ((b & 0x80) && sh < 70);
    if (b & 0x80) *bad = 1;
  }
  *pp = p;
  return v;
}
/* The numbers of a record that ends at r->end, in a buffer readable to
 * `readable` (>= r->end): where the longest numbers fit before `readable`,
 * read without a bound test per byte, and then checked against the
 * record's end. */
static void pstat_dec(rd *r, const unsigned char *readable, cp_pstat *s) {
  uint64_t v[PSTAT_N] = {0};
  if (!r->err && r->p <= readable && (size_t)(readable - r->p) >= PSTAT_MAX) {
    const unsigned char *p = r->p;
    int bad = 0;
    uint64_t present = getvar_in(&p, &bad);
    if (present >> PSTAT_N) bad = 1, present = 0;
    for (; present; present &= present - 1) v[__builtin_ctzll(present)] = getvar_in(&p, &bad);
    r->p = p;
    if (bad || p > r->end) { r->err = 1; memset(v, 0, sizeof v); }
  } else {
    uint64_t present = getvar(r);
    if (present >> PSTAT_N) r->err = 1, present = 0;
    for (; present && !r->err; present &= present - 1) v[__builtin_ctzll(present)] = getvar(r);
  }
  const uint64_t *x = v;   /* PSTAT_FIELDS' order */
  s->calls = *x++; s->total_ns = *x++; s->self_ns = *x++; s->bytes = *x++;
  s->states = *x++; s->gpu_ns = *x++; s->gpu_samples = *x++; s->unterminated = *x++;
  s->ev_min_ns = *x++ - 1; s->ev_max_ns = *x++; s->nranks = (uint32_t)*x++;
  s->tmin_ns = *x++; s->tmin_rank = (int32_t)((int64_t)*x++ - 1);
  s->tmax_ns = *x++; s->tmax_rank = (int32_t)((int64_t)*x++ - 1);
  s->gpu_first_ns = *x++; s->gpu_first_samples = *x++;
  s->gpu_est_ns = *x++; s->gpu_est_calls = *x++; s->gpu_outliers = *x++;
  s->gpu_launch_ns = *x++; s->gpu_launch_samples = *x++; s->gpu_launch_calls = *x++;
  s->untimed_calls = *x++;
  s->unseen_calls = *x++;
  s->gpu_borrowed_calls = *x++;
}

/* A path's message-size classes, after its numbers (only Coll/P2p paths
 * with GPU samples have any; a record without them ends with its numbers):
 * var count, then per class var k and its CP_SIZE_SUM_FIELDS sums packed
 * as the numbers are (a bitmap of those not 0, their varints). */
#define CLS_FIELDS(X, c) \
  X((c)->calls) X((c)->samples) X((c)->first) X((c)->outliers) X((c)->lent) X((c)->per_n) \
  X((c)->per_ns) X((c)->est_ns) X((c)->uncovered)
#define CLS_COUNT1(v) +1
_Static_assert(0 CLS_FIELDS(CLS_COUNT1, (cp_size_sum *)0) == CP_SIZE_SUM_FIELDS, "CLS_FIELDS lists them all");
#define CLS_MAX (10 + CP_SIZE_CLASSES * (2 + 2 + CP_SIZE_SUM_FIELDS * 10))
static int cls_used(const cp_size_sum *c) {
  static const cp_size_sum none;
  return memcmp(c, &none, sizeof none) != 0;
}
static size_t cls_enc(unsigned char *b, const cp_size_sum *cls) {
  if (!cls) return 0;
  size_t n = 0, count = 0;
  for (unsigned k = 0; k < CP_SIZE_CLASSES; k++) count += cls_used(&cls[k]);
  if (!count) return 0;
  n += varenc(b + n, count);
  for (unsigned k = 0; k < CP_SIZE_CLASSES; k++) {
    const cp_size_sum *c = &cls[k];
    if (!cls_used(c)) continue;
    n += varenc(b + n, k);
    unsigned present = 0, bit = 1;
#define PRES(x) { if (x) present |= bit; bit <<= 1; }
    CLS_FIELDS(PRES, c)
#undef PRES
    n += varenc(b + n, present);
#define ENC(x) { const uint64_t v_ = (x); if (v_) n += varenc(b + n, v_); }
    CLS_FIELDS(ENC, c)
#undef ENC
  }
  return n;
}
/* The classes after a record's numbers (r at them, bounded by the
 * record's end), added into cls, which is cleared first when *has is 0
 * (most records have none: 3 KB not cleared per path); *has set when
 * there were any. */
static void cls_dec(rd *r, cp_size_sum *cls, int *has) {
  if (r->err || r->p >= r->end) return;
  uint64_t count = getvar(r);
  if (count > CP_SIZE_CLASSES) { r->err = 1; return; }
  if (count && !*has) {
    memset(cls, 0, CP_SIZE_CLASSES * sizeof *cls);
    *has = 1;
  }
  for (uint64_t i = 0; i < count && !r->err; i++) {
    const uint64_t k = getvar(r), present = getvar(r);
    if (k >= CP_SIZE_CLASSES || present >> CP_SIZE_SUM_FIELDS) { r->err = 1; return; }
    uint64_t v[CP_SIZE_SUM_FIELDS] = {0};
    for (unsigned f = 0; f < CP_SIZE_SUM_FIELDS; f++)
      if (present & (1u << f)) v[f] = getvar(r);
    const cp_size_sum one = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]};
    cp_size_sum *c = &cls[k];
#define ADD(x) c->x += one.x;
    ADD(calls) ADD(samples) ADD(first) ADD(outliers) ADD(lent) ADD(per_n) ADD(per_ns) ADD(est_ns) ADD(uncovered)
#undef ADD
  }
}

/* one record; returns its size (written when w) */
static size_t rec_put(wr *w, uint64_t hash, const unsigned char *path, size_t plen, const unsigned char *func,
                      size_t flen, uint32_t lt, const cp_pstat *s, const cp_size_sum *cls) {
  unsigned char st[PSTAT_MAX + CLS_MAX];
  size_t sl = pstat_enc(st, s);
  sl += cls_enc(st + sl, cls);
  size_t rest = varlen(plen) + plen + 1 + varlen(flen) + flen + 1 + varlen(lt) + sl;
  if (w) {
    static const unsigned char nul = 0;
    put64(w, hash); putvar(w, rest);
    putvar(w, plen); put(w, path, plen); put(w, &nul, 1);
    putvar(w, flen); put(w, func, flen); put(w, &nul, 1);
    putvar(w, lt); put(w, st, sl);
  }
  return 8 + varlen(rest) + rest;
}

/* Which of two descriptions of one path is kept when ranks disagree (they
 * should not): the smaller (leaf type, func bytes), so the result does not
 * depend on the order of merging. */
static int desc_less(uint32_t lta, const unsigned char *fa, size_t fla,
                     uint32_t ltb, const unsigned char *fb, size_t flb) {
  if (lta != ltb) return lta < ltb;
  int c = memcmp(fa, fb, fla < flb ? fla : flb);
  return c ? c < 0 : fla < flb;
}

/* ---- header ---- */

typedef struct {
  uint64_t npaths, set_len;
  uint32_t nhosts, ncomms, nfrozen;
  cp_agg agg;
  const unsigned char *hosts_at, *frozen_at, *recs;   /* hosts then comms; frozen; first record */
} hdr;

static int hdr_read(const unsigned char *buf, size_t len, hdr *h) {
  memset(h, 0, sizeof *h);
  rd r = {buf, buf + len, 0};
  if (get64(&r) != PSET_MAGIC) return -1;
  h->set_len = get64(&r); h->npaths = get64(&r);
  h->nhosts = get32(&r); h->ncomms = get32(&r); h->nfrozen = get32(&r);
  const unsigned char *a = get(&r, sizeof h->agg);
  if (r.err || h->set_len > len || h->npaths > len / 8 || h->nhosts > len || h->ncomms > len ||
      h->nfrozen > len)
    return -1;
  memcpy(&h->agg, a, sizeof h->agg);
  r.end = buf + h->set_len;
  h->hosts_at = r.p;
  for (uint32_t i = 0; i < h->nhosts && !r.err; i++) { get64(&r); get(&r, get32(&r)); }
  for (uint32_t i = 0; i < h->ncomms && !r.err; i++) {
    get64(&r); get64(&r); get64(&r); get32(&r); get32(&r); get(&r, get32(&r));
  }
  h->frozen_at = r.p;
  if (!r.err && h->nfrozen) {
    size_t span = cp_frz_packed_span(r.p, r.end, h->nfrozen);
    if (!span) return -1;
    get(&r, span);
  }
  h->recs = r.p;
  return r.err ? -1 : 0;
}

int cp_pset_count(const unsigned char *buf, size_t len, uint64_t *npaths, uint64_t *set_len) {
  hdr h;
  if (hdr_read(buf, len, &h) != 0) return -1;
  if (npaths) *npaths = h.npaths;
  if (set_len) *set_len = h.set_len;
  return 0;
}

static void put_frozen(wr *w, const cp_frz *v, size_t n) {
  size_t b = cp_frz_packed_size(v, n);
  if (w->err || w->cap - w->len < b) { w->err = 1; return; }
  w->len += cp_frz_pack(w->p + w->len, v, n);
}

static void hdr_put(wr *w, uint64_t npaths, const cp_agg *a, const cp_mhost *hs, size_t nh,
                    const cp_mcomm *cs, size_t nc, const cp_frz *fz, size_t nf) {
  put64(w, PSET_MAGIC); put64(w, 0); put64(w, npaths);
  put32(w, (uint32_t)nh); put32(w, (uint32_t)nc); put32(w, (uint32_t)nf);
  put(w, a, sizeof *a);
  for (size_t i = 0; i < nh; i++) { put64(w, hs[i].ranks); put32(w, hs[i].len); put(w, hs[i].name, hs[i].len); }
  for (size_t i = 0; i < nc; i++) {
    const cp_mcomm *c = &cs[i];
    put64(w, c->comm_id); put64(w, c->members); put64(w, c->events);
    put32(w, (uint32_t)c->nranks); put32(w, (uint32_t)c->nnodes);
    put32(w, c->nlen); put(w, c->name, c->nlen);
  }
  put_frozen(w, fz, nf);
}
static size_t hdr_size(size_t nh, const cp_mhost *hs, size_t nc, const cp_mcomm *cs, const cp_frz *fz,
                       size_t nf) {
  size_t n = 36 + sizeof(cp_agg) + cp_frz_packed_size(fz, nf);
  for (size_t i = 0; i < nh; i++) n += 12 + hs[i].len;
  for (size_t i = 0; i < nc; i++) n += 36 + cs[i].nlen;
  return n;
}
static void hdr_patch(wr *w, uint64_t npaths) {
  uint64_t sl = w->len;
  if (w->cap >= 24) { memcpy(w->p + 8, &sl, 8); memcpy(w->p + 16, &npaths, 8); }
}

static int bytes_cmp(const char *a, uint32_t al, const char *b, uint32_t bl) {
  int c = memcmp(a, b, al < bl ? al : bl);
  if (c) return c;
  return al < bl ? -1 : al > bl;
}
static int mhost_cmp(const void *x, const void *y) {
  const cp_mhost *a = x, *b = y;
  return bytes_cmp(a->name, a->len, b->name, b->len);
}
/* A total order, not by id alone: ranks that disagree on an id's size or
 * name (misuse, or ids colliding across jobs' captures) keep the smallest
 * description, whatever order the inputs came in.  qsort is not stable, and
 * the tree collation and an offline one meet the same ranks in different
 * orders, so an id-only order made their summaries differ. */
static int mcomm_cmp(const void *x, const void *y) {
  const cp_mcomm *a = x, *b = y;
  if (a->comm_id != b->comm_id) return a->comm_id < b->comm_id ? -1 : 1;
  if (a->nranks != b->nranks) return a->nranks < b->nranks ? -1 : 1;
  if (a->nnodes != b->nnodes) return a->nnodes < b->nnodes ? -1 : 1;
  return bytes_cmp(a->name, a->nlen, b->name, b->nlen);
}
/* sort and combine equal entries in place; returns the new count */
static size_t hosts_unique(cp_mhost *h, size_t n) {
  qsort(h, n, sizeof *h, mhost_cmp);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (m && !mhost_cmp(&h[m - 1], &h[i])) h[m - 1].ranks += h[i].ranks;
    else h[m++] = h[i];
  }
  return m;
}
static size_t comms_unique(cp_mcomm *c, size_t n) {
  qsort(c, n, sizeof *c, mcomm_cmp);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (m && c[m - 1].comm_id == c[i].comm_id) { c[m - 1].members += c[i].members; c[m - 1].events += c[i].events; }
    else c[m++] = c[i];
  }
  return m;
}

/* ---- one rank ---- */

static void agg_from_rank(const cp_rank_data *r, cp_agg *a) {
  cp_agg_init(a);
  a->ranks_reported = 1;
  a->ranks_with_nccl = r->ncomms > 0;
  a->events_recorded = r->events_recorded; a->events_pxn = r->events_pxn;
  a->events_counted = r->events_counted;
  a->unterminated = r->unterminated; a->blacklist_evictions = r->blacklist_evictions;
  a->unknown_parent = r->unknown_parent; a->trace_dropped = r->trace_dropped;
  a->bad_calls = r->bad_calls; a->gpu_sampled_calls = r->gpu_sampled_calls;
  a->gpu_samples_dropped = r->gpu_samples_dropped;
  a->gpu_samples_deferred = r->gpu_samples_deferred;
  a->gpu_launches_timed = r->gpu_launches_timed;
  a->gpu_launches_unattributed = r->gpu_launches_unattributed;
  a->gpu_launches_skipped = r->gpu_launches_skipped;
  a->gpu_launches_unread = r->gpu_launches_unread;
  a->gpu_launches_idle = r->gpu_launches_idle;
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
  if (cp_pbuf_alloc(out, hdr_size(0, NULL, 0, NULL, NULL, 0))) return -1;
  wr w = {out->p, 0, out->cap, 0};
  hdr_put(&w, 0, &a, NULL, 0, NULL, 0, NULL, 0);
  hdr_patch(&w, 0);
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
  size_t nc = comms_unique(cs, r->ncomms);
  size_t cap = hdr_size(1, &host, nc, cs, &fz, (size_t)nf);
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
  hdr_put(&w, 0, &a, &host, 1, cs, nc, &fz, (size_t)nf);
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
  hdr_patch(&w, np);
  out->len = w.len;
  free(cs); free(k);
  if (w.err) { cp_pbuf_free(out); return -1; }
  return 0;
}

/* ---- the summary's storage: its paths array and its strings ---- */

/* Rank 0 holds one cp_gpath per global path, and at 64 ranks x 2000 paths
 * (mpi_wrap/bench/collbench.c, 65,000 global paths) the collation may grow
 * a rank by at most 16 MiB: the paths array (10 MB at this size), their
 * strings (5 MB) and what is left of the inputs.  GPU numbers held in
 * every path took it to 20.3 MiB, so this size is kept. */
_Static_assert(sizeof(cp_gpath) <= 160, "cp_gpath grew: rank 0 holds one per global path");

typedef struct chunk { struct chunk *next; size_t cap, len; char data[]; } chunk;
typedef struct cp_sumstore {
  chunk *chunks;
  cp_pbuf paths;                        /* the cp_gpath array */
  struct { const char *s; uint32_t len; } funcs[64];   /* leaf funcs, shared */
} cp_sumstore;

void cp_sumstore_free(void *owner) {
  cp_sumstore *st = owner;
  if (!st) return;
  for (chunk *c = st->chunks, *nx; c; c = nx) { nx = c->next; munmap(c, sizeof *c + c->cap); }
  cp_pbuf_free(&st->paths);
  free(st);
}

/* n bytes at a multiple of align (a power of two, at most 8: data[] is
 * 8-aligned in an mmap'd chunk) */
static void *store_alloc(cp_sumstore *st, size_t n, size_t align) {
  chunk *c = st->chunks;
  size_t at = c ? (c->len + align - 1) & ~(align - 1) : 0;
  if (!c || at > c->cap || c->cap - at < n) {
    size_t cap = n > ((size_t)1 << 20) - sizeof *c ? n : ((size_t)1 << 20) - sizeof *c;
    void *m = mmap(NULL, sizeof *c + cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    c = m; c->cap = cap; c->len = 0; c->next = st->chunks; st->chunks = c;
    at = 0;
  }
  c->len = at + n;
  return c->data + at;
}

/* a NUL-terminated copy of s[0..n) */
static const char *store_put(cp_sumstore *st, const void *s, size_t n) {
  char *q = store_alloc(st, n + 1, 1);
  if (!q) return NULL;
  memcpy(q, s, n); q[n] = 0;
  return q;
}

/* A path's GPU numbers, held only where there are some (most paths have
 * none: cp_gstat).  gpu_launch_calls alone does not count: it is what a
 * launch mean stands for, read only with launch samples, and merge.c sets
 * it to every call of a path in a rank file from before it.  *failed set
 * when out of memory. */
static const cp_pgpu *store_gpu(cp_sumstore *st, const cp_pgpu *g, int *failed) {
  cp_pgpu some = *g;
  static const cp_pgpu none;
  if (!some.gpu_launch_samples) some.gpu_launch_calls = 0;
  if (!memcmp(&some, &none, sizeof none)) return NULL;
  cp_pgpu *q = store_alloc(st, sizeof *q, _Alignof(cp_pgpu));
  if (!q) { *failed = 1; return NULL; }
  *q = *g;
  return q;
}

/* A path's size classes into the summary's list (paths arrive by id,
 * so the list stays sorted).  -1 when out of memory. */
static int store_sizes(cp_summary *sum, cp_sumstore *st, uint64_t id, const cp_size_sum *cls) {
  if ((sum->nsized & (sum->nsized - 1)) == 0) {   /* 0, 1, 2, 4, ...: grow */
    cp_sized *v = realloc(sum->sized, (sum->nsized ? 2 * sum->nsized : 1) * sizeof *v);
    if (!v) return -1;
    sum->sized = v;
  }
  cp_size_sum *c = store_alloc(st, CP_SIZE_CLASSES * sizeof *c, _Alignof(cp_size_sum));
  if (!c) return -1;
  memcpy(c, cls, CP_SIZE_CLASSES * sizeof *c);
  sum->sized[sum->nsized++] = (cp_sized){id, c};
  return 0;
}

/* leaf funcs repeat: keep one copy of each recent one */
static const char *store_func(cp_sumstore *st, const unsigned char *f, size_t n) {
  unsigned hsh = (unsigned)n * 31u;
  for (size_t i = 0; i < n && i < 16; i++) hsh = hsh * 131u + f[i];
  unsigned slot = hsh & 63u;
  if (st->funcs[slot].s && st->funcs[slot].len == n && !memcmp(st->funcs[slot].s, f, n)) return st->funcs[slot].s;
  const char *q = store_put(st, f, n);
  if (q) { st->funcs[slot].s = q; st->funcs[slot].len = (uint32_t)n; }
  return q;
}

/* ---- merge ---- */

/* The frozen-mask entries of all inputs, one per reason (frozen.h).  Their
 * reasons point into the inputs: use them before the inputs' pages are
 * given back.  *n = 0 and NULL when there are none; -1 in *rc when memory
 * ran out (those ranks are then missing from the list). */
static cp_frz *frozen_of_inputs(const hdr *hs, size_t k, size_t *n, int *rc) {
  size_t total = 0;
  *n = 0;
  for (size_t i = 0; i < k; i++) total += hs[i].frozen_at ? hs[i].nfrozen : 0;
  if (!total) return NULL;
  cp_frz *v = calloc(total, sizeof *v);
  if (!v) { *rc = -1; return NULL; }
  size_t m = 0;
  for (size_t i = 0; i < k; i++) {
    if (!hs[i].frozen_at || !hs[i].nfrozen) continue;
    if (cp_frz_unpack(hs[i].frozen_at, hs[i].nfrozen, v + m) != 0) { *rc = -1; continue; }
    m += hs[i].nfrozen;
  }
  *n = cp_frz_combine(v, m);
  return v;
}

/* The summary's copy: reasons into its storage, ranges handed over (v's
 * entries no longer own them).  On no memory, fewer entries. */
static void frozen_to_summary(cp_summary *sum, cp_sumstore *st, cp_frz *v, size_t n, int *rc) {
  sum->frozen = n ? calloc(n, sizeof *sum->frozen) : NULL;
  if (n && !sum->frozen) { *rc = -1; return; }
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const char *r = store_put(st, v[i].reason, v[i].len);
    if (!r) { *rc = -1; continue; }
    cp_frozen *d = &sum->frozen[m++];
    d->reason = r;
    d->ranges = v[i].ranges; d->nranges = v[i].nranges;
    d->nranks = cp_frz_nranks(d->ranges, d->nranges);
    v[i].ranges = NULL;
  }
  sum->nfrozen = m;
  cp_frozen_sort(sum->frozen, m);
}

typedef struct cur {
  const unsigned char *rec, *next, *end;  /* this record, the one after, end of records */
  uint64_t hash;
  const unsigned char *path, *func, *nums;
  uint32_t plen, flen, lt;
  uint64_t idx, n;                        /* index of this record, records in the input */
  size_t src;
} cur;

/* Parse the record at c->next.  0 ok, 1 no more, -1 damaged. */
static int cur_load(cur *c) {
  if (c->idx >= c->n) return 1;
  rd r = {c->next, c->end, 0};
  uint64_t hash = get64(&r), rest = getvar(&r);
  if (r.err || rest > (uint64_t)(r.end - r.p)) return -1;
  const unsigned char *rend = r.p + rest;
  r.end = rend;
  uint64_t plen = getvar(&r);
  const unsigned char *path = get(&r, plen < UINT32_MAX ? plen + 1 : (size_t)-1);
  uint64_t flen = getvar(&r);
  const unsigned char *func = get(&r, flen < UINT32_MAX ? flen + 1 : (size_t)-1);
  uint64_t lt = getvar(&r);
  if (r.err || path[plen] || func[flen]) return -1;
  c->nums = r.p;     /* the numbers are read (bounded by rend) only when needed */
  c->rec = c->next; c->next = rend; c->hash = hash;
  c->path = path; c->plen = (uint32_t)plen; c->func = func; c->flen = (uint32_t)flen; c->lt = (uint32_t)lt;
  return 0;
}
/* The record's numbers into *s; its size classes added into cls
 * (cls_dec: *has says whether cls holds any yet). */
static void cur_nums(const cur *c, cp_pstat *s, cp_size_sum *cls, int *has) {
  rd r = {c->nums, c->next, 0};
  pstat_dec(&r, c->end, s);
  cls_dec(&r, cls, has);
}
static inline int cur_cmp(const cur *a, const cur *b) {
  if (a->hash != b->hash) return a->hash < b->hash ? -1 : 1;
  int c = memcmp(a->path, b->path, a->plen < b->plen ? a->plen : b->plen);
  if (c) return c;
  return a->plen < b->plen ? -1 : a->plen > b->plen;
}

/* binary min-heap of cursors */
static void heap_down(cur **h, size_t n, size_t i) {
  for (;;) {
    size_t l = 2 * i + 1, m = i;
    if (l < n && cur_cmp(h[l], h[m]) < 0) m = l;
    if (l + 1 < n && cur_cmp(h[l + 1], h[m]) < 0) m = l + 1;
    if (m == i) return;
    cur *t = h[i]; h[i] = h[m]; h[m] = t; i = m;
  }
}
static void heap_up(cur **h, size_t i) {
  while (i) {
    size_t p = (i - 1) / 2;
    if (cur_cmp(h[i], h[p]) >= 0) return;
    cur *t = h[i]; h[i] = h[p]; h[p] = t; i = p;
  }
}

int cp_pset_merge(cp_pbuf *in, size_t k, uint32_t *const *maps, cp_pbuf *out, size_t trailer,
                  cp_summary *sum, uint64_t *set_bytes, uint64_t *npaths) {
  int rc = 0;
  if (out) memset(out, 0, sizeof *out);
  cur *cs = calloc(k + 1, sizeof *cs);
  cur **heap = calloc(k + 1, sizeof *heap), **grp = calloc(k + 1, sizeof *grp);
  hdr *hs = calloc(k + 1, sizeof *hs);
  if (!cs || !heap || !grp || !hs) { free(cs); free(heap); free(grp); free(hs); return -1; }

  /* headers: counters, hosts, communicators */
  cp_agg agg;
  cp_agg_init(&agg);
  size_t nh = 0, nc = 0, cap = 256 + trailer, total = 0;
  for (size_t i = 0; i < k; i++) {
    if (hdr_read(in[i].p, in[i].len, &hs[i]) != 0) {
      rc = -1;
      memset(&hs[i], 0, sizeof hs[i]);
      if (maps && maps[i]) { /* the caller sized the map from the header, which failed: nothing to fill */ }
      continue;
    }
    cp_agg_combine(&agg, &hs[i].agg);
    nh += hs[i].nhosts; nc += hs[i].ncomms; cap += in[i].len; total += hs[i].npaths;
  }
  cp_mhost *hl = calloc(nh + 1, sizeof *hl);
  cp_mcomm *cl = calloc(nc + 1, sizeof *cl);
  if (!hl || !cl) { rc = -1; goto done; }
  nh = nc = 0;
  for (size_t i = 0; i < k; i++) {
    if (!hs[i].hosts_at) continue;
    rd r = {hs[i].hosts_at, hs[i].recs, 0};
    for (uint32_t j = 0; j < hs[i].nhosts; j++) {
      cp_mhost *h = &hl[nh++];
      h->ranks = get64(&r); h->len = get32(&r); h->name = (const char *)get(&r, h->len);
    }
    for (uint32_t j = 0; j < hs[i].ncomms; j++) {
      cp_mcomm *c = &cl[nc++];
      c->comm_id = get64(&r); c->members = get64(&r); c->events = get64(&r);
      c->nranks = (int32_t)get32(&r); c->nnodes = (int32_t)get32(&r);
      c->nlen = get32(&r); c->name = (const char *)get(&r, c->nlen);
    }
  }
  nh = hosts_unique(hl, nh);
  nc = comms_unique(cl, nc);
  size_t nf = 0;
  cp_frz *fz = frozen_of_inputs(hs, k, &nf, &rc);
  uint64_t bytes = hdr_size(nh, hl, nc, cl, fz, nf);

  wr w = {0};
  if (out) {
    if (cp_pbuf_alloc(out, cap)) { rc = -1; out = NULL; }
    else { w.p = out->p; w.cap = out->cap; hdr_put(&w, 0, &agg, hl, nh, cl, nc, fz, nf); }
  }
  cp_sumstore *st = NULL;
  if (sum) {
    st = calloc(1, sizeof *st);
    sum->hosts = calloc(nh + 1, sizeof *sum->hosts);
    sum->comms = calloc(nc + 1, sizeof *sum->comms);
    if (!st || !sum->hosts || !sum->comms || cp_pbuf_alloc(&st->paths, (total + 1) * sizeof(cp_gpath))) {
      free(st); free(sum->hosts); free(sum->comms);
      sum->hosts = NULL; sum->comms = NULL; sum = NULL; st = NULL; rc = -1;
    } else {
      sum->owner = st;
      sum->paths = (cp_gpath *)(void *)st->paths.p;
      sum->agg = agg;
      for (size_t i = 0; i < nh; i++) {
        sum->hosts[i].name = store_put(st, hl[i].name, hl[i].len);
        sum->hosts[i].ranks = hl[i].ranks;
        if (!sum->hosts[i].name) sum->hosts[i].name = "";
      }
      sum->nhosts = nh;
      for (size_t i = 0; i < nc; i++) {
        cp_comm_sum *d = &sum->comms[i];
        d->comm_id = cl[i].comm_id; d->name = store_put(st, cl[i].name, cl[i].nlen);
        if (!d->name) d->name = "";
        d->nranks = cl[i].nranks; d->nnodes = cl[i].nnodes; d->members = cl[i].members; d->events = cl[i].events;
      }
      sum->ncomms = nc;
      frozen_to_summary(sum, st, fz, nf, &rc);
    }
  }
  cp_frz_free(fz, nf);
  free(fz);

  /* the paths */
  size_t hn = 0;
  for (size_t i = 0; i < k; i++) {
    cur *c = &cs[i];
    c->src = i; c->n = hs[i].npaths;
    if (!hs[i].recs) continue;
    c->next = hs[i].recs; c->end = in[i].p + hs[i].set_len;
    int e = cur_load(c);
    if (e < 0) { rc = -1; for (uint64_t j = 0; maps && maps[i] && j < c->n; j++) maps[i][j] = UINT32_MAX; }
    if (e == 0) { heap[hn] = c; heap_up(heap, hn); hn++; }
  }
  uint64_t nout = 0;
  while (hn) {
    size_t ng = 0;
    cur *top = heap[0];
    grp[ng++] = top;
    heap[0] = heap[--hn]; heap_down(heap, hn, 0);
    while (hn && cur_cmp(heap[0], top) == 0) {
      grp[ng++] = heap[0];
      heap[0] = heap[--hn]; heap_down(heap, hn, 0);
    }
    /* the path's description and numbers */
    cur *best = grp[0];
    cp_pstat s;
    cp_size_sum cls[CP_SIZE_CLASSES];
    int need_nums = ng > 1 || sum, has_cls = 0;
    memset(&s, 0, sizeof s);   /* its padding too: the summary's bytes are the same every run */
    if (need_nums) cur_nums(grp[0], &s, cls, &has_cls);
    for (size_t g = 1; g < ng; g++) {
      cp_pstat t;
      cur_nums(grp[g], &t, cls, &has_cls);
      cp_pstat_combine(&s, &t);
      if (desc_less(grp[g]->lt, grp[g]->func, grp[g]->flen, best->lt, best->func, best->flen)) best = grp[g];
    }
    size_t rl;
    if (ng == 1) {
      rl = (size_t)(top->next - top->rec);
      if (out) put(&w, top->rec, rl);
    } else {
      rl = rec_put(out ? &w : NULL, top->hash, top->path, top->plen, best->func, best->flen, best->lt, &s,
                   has_cls ? cls : NULL);
    }
    bytes += rl;
    if (sum) {
      cp_gpath *d = &sum->paths[nout];
      memset(d, 0, sizeof *d);
      d->id = (int64_t)nout; d->hash = top->hash;
      d->path = store_put(st, top->path, top->plen);
      d->leaf_func = store_func(st, best->func, best->flen);
      if (!d->path || !d->leaf_func) { rc = -1; d->path = d->path ? d->path : ""; d->leaf_func = d->leaf_func ? d->leaf_func : ""; }
      d->leaf_type = best->lt;
      d->s.core = s.core;
      int nomem = 0;
      d->s.gpu = store_gpu(st, &s.gpu, &nomem);
      if (has_cls && store_sizes(sum, st, nout, cls) != 0) nomem = 1;
      if (nomem) rc = -1;
    }
    /* move every input of the group on */
    for (size_t g = 0; g < ng; g++) {
      cur *c = grp[g];
      if (maps && maps[c->src]) maps[c->src][c->idx] = (uint32_t)nout;
      if (sum) pbuf_release_below(&in[c->src], c->rec);
      c->idx++;
      int e = cur_load(c);
      if (e == 0) { heap[hn] = c; heap_up(heap, hn); hn++; }
      else if (e < 0) {
        rc = -1;
        for (uint64_t j = c->idx; maps && maps[c->src] && j < c->n; j++) maps[c->src][j] = UINT32_MAX;
      }
    }
    nout++;
  }
  if (out) {
    hdr_patch(&w, nout);
    out->len = w.len;
    if (w.err) { rc = -1; cp_pbuf_free(out); cp_pset_empty(out); }
  }
  if (sum) sum->npaths = nout;
  if (set_bytes) *set_bytes = bytes;
  if (npaths) *npaths = nout;
done:
  free(hl); free(cl);
  free(cs); free(heap); free(grp); free(hs);
  return rc;
}
