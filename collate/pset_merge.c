/*
 * pset_merge.c — the k-way merge of packed sets (pset.h), into another
 * packed set (to send up the tree) or into the summary, whose paths array
 * and strings it stores (cp_sumstore); with the output index of every
 * input record, from which global ids map back to every rank.
 */
#include "pset_codec.h"
#include "reduce.h"
#include <stdlib.h>
#include <sys/mman.h>

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
    if (cp_pset_hdr_read(in[i].p, in[i].len, &hs[i]) != 0) {
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
  nh = cp_pset_hosts_unique(hl, nh);
  nc = cp_pset_comms_unique(cl, nc);
  size_t nf = 0;
  cp_frz *fz = frozen_of_inputs(hs, k, &nf, &rc);
  uint64_t bytes = cp_pset_hdr_size(nh, hl, nc, cl, fz, nf);

  wr w = {0};
  if (out) {
    if (cp_pbuf_alloc(out, cap)) { rc = -1; out = NULL; }
    else { w.p = out->p; w.cap = out->cap; cp_pset_hdr_put(&w, 0, &agg, hl, nh, cl, nc, fz, nf); }
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
      if (sum) cp_pbuf_release_below(&in[c->src], c->rec);
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
    cp_pset_hdr_patch(&w, nout);
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
