/*
 * pset_header.c — a packed set's buffer (cp_pbuf: mmap'd when large, its
 * consumed pages given back while merging) and its header (magic, lengths,
 * the run counters, hosts, communicators and frozen masks of the ranks it
 * covers; layout in pset.h), read and written for pset_rank.c and
 * pset_merge.c.
 */
#include "pset_codec.h"
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

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
void cp_pbuf_release_below(cp_pbuf *b, const unsigned char *at) {
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

/* ---- header ---- */

int cp_pset_hdr_read(const unsigned char *buf, size_t len, hdr *h) {
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
  if (cp_pset_hdr_read(buf, len, &h) != 0) return -1;
  if (npaths) *npaths = h.npaths;
  if (set_len) *set_len = h.set_len;
  return 0;
}

static void put_frozen(wr *w, const cp_frz *v, size_t n) {
  size_t b = cp_frz_packed_size(v, n);
  if (w->err || w->cap - w->len < b) { w->err = 1; return; }
  w->len += cp_frz_pack(w->p + w->len, v, n);
}

void cp_pset_hdr_put(wr *w, uint64_t npaths, const cp_agg *a, const cp_mhost *hs, size_t nh,
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
size_t cp_pset_hdr_size(size_t nh, const cp_mhost *hs, size_t nc, const cp_mcomm *cs, const cp_frz *fz,
                        size_t nf) {
  size_t n = 36 + sizeof(cp_agg) + cp_frz_packed_size(fz, nf);
  for (size_t i = 0; i < nh; i++) n += 12 + hs[i].len;
  for (size_t i = 0; i < nc; i++) n += 36 + cs[i].nlen;
  return n;
}
void cp_pset_hdr_patch(wr *w, uint64_t npaths) {
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
size_t cp_pset_hosts_unique(cp_mhost *h, size_t n) {
  qsort(h, n, sizeof *h, mhost_cmp);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (m && !mhost_cmp(&h[m - 1], &h[i])) h[m - 1].ranks += h[i].ranks;
    else h[m++] = h[i];
  }
  return m;
}
size_t cp_pset_comms_unique(cp_mcomm *c, size_t n) {
  qsort(c, n, sizeof *c, mcomm_cmp);
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (m && c[m - 1].comm_id == c[i].comm_id) { c[m - 1].members += c[i].members; c[m - 1].events += c[i].events; }
    else c[m++] = c[i];
  }
  return m;
}
