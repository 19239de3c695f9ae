/*
 * pset_codec.h — the bytes of a packed path set (layout: pset.h), shared
 * by the files that write and read them: pset_header.c (buffers, the
 * header), pset_rank.c (one rank's set) and pset_merge.c (the k-way
 * merge).  A record's encoding is static inline here: rank 0 decodes every
 * input record, and each file keeps the compiler's choice of what to
 * inline, as when they were one file.  Internal to collate/ (hidden).
 */
#ifndef COLLPROF_PSET_CODEC_H
#define COLLPROF_PSET_CODEC_H
#include "pset.h"
#include "frozen.h"
#include <string.h>
#pragma GCC visibility push(hidden)

#define PSET_MAGIC 0x4350534554340000ull /* "CPSET4" */
#define BIG ((size_t)64 << 10)            /* mmap from here; release in steps of this */

/* ---- writing and reading bytes ---- */

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
static inline uint64_t getvar_long(rd *r) {
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
static inline size_t pstat_enc(unsigned char *b, const cp_pstat *s) {
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
static inline void pstat_dec(rd *r, const unsigned char *readable, cp_pstat *s) {
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
static inline int cls_used(const cp_size_sum *c) {
  static const cp_size_sum none;
  return memcmp(c, &none, sizeof none) != 0;
}
static inline size_t cls_enc(unsigned char *b, const cp_size_sum *cls) {
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
static inline void cls_dec(rd *r, cp_size_sum *cls, int *has) {
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

/* one record; returns its size (written when w).  Out of line, as in one
 * file before: 5 KiB of code with the numbers' encoding unrolled. */
static __attribute__((noinline, unused)) size_t rec_put(wr *w, uint64_t hash, const unsigned char *path,
                                                        size_t plen, const unsigned char *func, size_t flen,
                                                        uint32_t lt, const cp_pstat *s, const cp_size_sum *cls) {
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
static inline int desc_less(uint32_t lta, const unsigned char *fa, size_t fla,
                            uint32_t ltb, const unsigned char *fb, size_t flb) {
  if (lta != ltb) return lta < ltb;
  int c = memcmp(fa, fb, fla < flb ? fla : flb);
  return c ? c < 0 : fla < flb;
}

/* ---- the header (pset_header.c) ---- */

typedef struct {
  uint64_t npaths, set_len;
  uint32_t nhosts, ncomms, nfrozen;
  cp_agg agg;
  const unsigned char *hosts_at, *frozen_at, *recs;   /* hosts then comms; frozen; first record */
} hdr;

/* Parse the header of buf[0..len): 0, -1 when malformed. */
int cp_pset_hdr_read(const unsigned char *buf, size_t len, hdr *h);
/* Write a header (set_len left 0 until cp_pset_hdr_patch); cp_pset_hdr_size
 * says beforehand how many bytes it takes. */
void cp_pset_hdr_put(wr *w, uint64_t npaths, const cp_agg *a, const cp_mhost *hs, size_t nh,
                     const cp_mcomm *cs, size_t nc, const cp_frz *fz, size_t nf);
size_t cp_pset_hdr_size(size_t nh, const cp_mhost *hs, size_t nc, const cp_mcomm *cs, const cp_frz *fz,
                        size_t nf);
/* Set set_len (= w->len now) and npaths in a header written by cp_pset_hdr_put. */
void cp_pset_hdr_patch(wr *w, uint64_t npaths);
/* Sort and combine equal entries in place; return the new count. */
size_t cp_pset_hosts_unique(cp_mhost *h, size_t n);
size_t cp_pset_comms_unique(cp_mcomm *c, size_t n);
/* Give back b's pages below `at` (mmap'd buffers only): the merge never
 * reads them again. */
void cp_pbuf_release_below(cp_pbuf *b, const unsigned char *at);

#pragma GCC visibility pop
#endif
