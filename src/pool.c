/*
 * pool.c — slots, round robin, growth, fallback set, blacklist, release at
 * finalize (pool.h).  The common cases of cp_pool_alloc and cp_pool_slot
 * are inlined in pool.h; the rest is here.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#pragma GCC visibility push(hidden)
#include "pool.h"
#include "pool_owner.h"
#include "config.h"
#include "paths.h"
#include "profile.h"
#include "tls.h"
#include "oneoff.h"

static atomic_flag evict_warned = ATOMIC_FLAG_INIT;

/* ---- chunk cache ----
 * A finalized communicator's chunks are kept here, not freed, and the next
 * pool that grows takes them: memory stays bounded by the peak number of
 * chunks in use at once, and slot memory is never unmapped, which is what
 * lets cp_pool_peek_live read a slot without the pool lock even while the
 * communicator is being finalized.  The link lives in slot 0's trace
 * record, away from the key bytes that such a read looks at. */
typedef struct cached_chunk { struct cached_chunk *next; uint32_t nslots; } cached_chunk;
_Static_assert(sizeof(cached_chunk) <= sizeof(cp_rec), "the link fits a slot's record");
static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static cached_chunk *cache_head;
static _Atomic uint64_t cache_bytes;

static inline cached_chunk *cache_link(cp_slot *c) { return (cached_chunk *)(void *)&c[0].rec; }

static void chunk_retire(cp_slot *c, uint32_t nslots) {
  cached_chunk *l = cache_link(c);
  l->nslots = nslots;
  pthread_mutex_lock(&cache_mu);
  l->next = cache_head;
  cache_head = l;
  pthread_mutex_unlock(&cache_mu);
  atomic_fetch_add_explicit(&cache_bytes, (uint64_t)nslots * sizeof(cp_slot), memory_order_relaxed);
}

/* Zero a cached chunk for its next pool word by word, with relaxed atomic
 * stores: a thread that read a slot pointer of the finalized pool before
 * the chunk was retired may still read that slot's key, generation and
 * hold lock-free (cp_pool_peek_parent, cp_pool_peek_live), and those
 * reads are atomic; a plain memset would race with them (ThreadSanitizer
 * found it with `collprof-replay --synthetic fuzz`: a stale KernelCh
 * parent of a finalized communicator while another thread inits one).
 * What such a read finds is generation 0, which no handle carries, until
 * the new pool hands the slot out.  Only a read that found the chunk
 * before the release can get here (a released pool has no chunks to
 * find); if it then reads a slot the new pool handed out meanwhile whose
 * generation and path match its handle, it takes that slot for its
 * parent and its hold or reference counts there.  NCCL sends no event of
 * a communicator it is finalizing; the fuzz does, and only the counts of
 * such a parent could go wrong, never memory. */
static void chunk_zero(cp_slot *c, uint32_t nslots) {
  uint64_t *w = (uint64_t *)(void *)c;
  const size_t n = (size_t)nslots * sizeof *c / sizeof *w;
  for (size_t i = 0; i < n; i++) __atomic_store_n(&w[i], 0, __ATOMIC_RELAXED);
}

/* A zeroed chunk of nslots slots: from the cache when one fits. */
static cp_slot *chunk_get(uint32_t nslots) {
  cp_slot *c = NULL;
  pthread_mutex_lock(&cache_mu);
  for (cached_chunk **pp = &cache_head; *pp; pp = &(*pp)->next)
    if ((*pp)->nslots == nslots) {
      cached_chunk *l = *pp;
      *pp = l->next;
      c = (cp_slot *)(void *)((char *)l - offsetof(cp_slot, rec));
      break;
    }
  pthread_mutex_unlock(&cache_mu);
  if (!c) return cp_calloc_lines((size_t)nslots * sizeof *c);
  atomic_fetch_sub_explicit(&cache_bytes, (uint64_t)nslots * sizeof(cp_slot), memory_order_relaxed);
  chunk_zero(c, nslots);
  return c;
}

_Atomic uint64_t cp_pool_lock_yields;

/* cp_pool_lock's slow path (pool.h says why it yields). */
void cp_pool_lock_contended(atomic_uint *lock) {
  for (;;) {
    for (int i = 0; i < CP_LOCK_SPINS; i++) {
      if (atomic_load_explicit(lock, memory_order_relaxed) == 0 &&
          atomic_exchange_explicit(lock, 1u, memory_order_acquire) == 0)
        return;
      cp_cpu_relax();
    }
    atomic_fetch_add_explicit(&cp_pool_lock_yields, 1, memory_order_relaxed);
    sched_yield();
  }
}

uint64_t cp_pool_cache_bytes(void) { return atomic_load_explicit(&cache_bytes, memory_order_relaxed); }

cp_pool *cp_pool_create(uint32_t comm_index, uint32_t chunk_size, uint64_t blacklist_cap) {
  return cp_pool_create_lane(comm_index, 0, chunk_size, blacklist_cap);
}

cp_pool *cp_pool_create_lane(uint32_t comm_index, uint32_t lane, uint32_t chunk_size, uint64_t blacklist_cap) {
  cp_pool *p = cp_calloc_lines(sizeof *p);
  if (!p) return NULL;
  atomic_init(&p->lock, 0u);
  if (chunk_size == 0) chunk_size = 1024;
  if (chunk_size > CP_POOL_FB_BASE) chunk_size = CP_POOL_FB_BASE;
  p->comm_index = comm_index;
  p->lane = lane;
  p->hkey = cp_pool_hkey(comm_index, lane);
  p->chunk_size = chunk_size;
  p->chunk_shift = (chunk_size & (chunk_size - 1)) ? -1 : __builtin_ctz(chunk_size);
  p->max_chunks = CP_POOL_FB_BASE / chunk_size;
  p->bl_cap = blacklist_cap ? blacklist_cap : 1;
  p->bl_head = p->bl_tail = CP_SLOT_NIL;
  p->memory = sizeof *p;
  return p;
}

static void free_arrays(cp_slot **a, uint32_t cap) {
  while (a) {
    cp_slot **prev = (cp_slot **)(void *)a[cap];
    free(a);
    a = prev;
    cap /= 2;
  }
}

void cp_pool_destroy(cp_pool *p) {
  if (!p) return;
  for (uint32_t c = 0; c < p->nchunks; c++) free(p->chunks[c]);
  free_arrays(p->chunks, p->chunks_cap);
  free_arrays(p->retired, p->retired_cap);
  p->chunks = NULL;
  if (p->fb)
    for (uint32_t i = 0; i < CP_POOL_FB_MAX; i++) free(p->fb[i]);
  free(p->fb);
  free(p->unterm);
  free(p->inbox);
  free(p);
}

/* One more unterminated event on `path` (release time; lock held). */
static void tally_unterm(cp_pool *p, uint32_t path, uint32_t *cap) {
  for (uint32_t i = 0; i < p->nunterm; i++)
    if (p->unterm[i].path == path) { p->unterm[i].n++; return; }
  if (p->nunterm == *cap) {
    uint32_t ncap = *cap ? *cap * 2 : 8;
    struct cp_unterm *nu = realloc(p->unterm, ncap * sizeof *nu);
    if (!nu) return;               /* out of memory: that count is lost */
    p->unterm = nu;
    *cap = ncap;
  }
  p->unterm[p->nunterm].path = path;
  p->unterm[p->nunterm].n = 1;
  p->nunterm++;
}

static void release_one(cp_pool *p, cp_slot *s, uint32_t *cap) {
  if (s->span_n) cp_pool_flush_span(s);
  if (s->live && !p->scratch) tally_unterm(p, s->path, cap);
}

void cp_pool_release_chunks(cp_pool *p) {
  if (p->released) return;
  uint32_t cap = 0;
  for (uint32_t c = 0; c < p->nchunks; c++) {
    for (uint32_t i = 0; i < p->chunk_size; i++) release_one(p, &p->chunks[c][i], &cap);
  }
  /* No slot is found from here on (cap0 first: a lock-free reader that
   * still sees the old first chunk reads memory the cache keeps). */
  __atomic_store_n(&p->cap0, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&p->slots0, NULL, __ATOMIC_RELEASE);
  for (uint32_t c = 0; c < p->nchunks; c++) chunk_retire(p->chunks[c], p->chunk_size);
  if (p->fb) {
    for (uint32_t i = 0; i < CP_POOL_FB_MAX; i++)
      if (p->fb[i]) { release_one(p, p->fb[i], &cap); free(p->fb[i]); }
    free(p->fb);
  }
  if (p->nunterm < cap) {          /* keep only what is used */
    struct cp_unterm *nu = realloc(p->unterm, p->nunterm * sizeof *nu);
    if (nu || p->nunterm == 0) p->unterm = nu;
  }
  p->fb = NULL;
  /* The chunk arrays stay (cp_pool_peek_slot may be reading one); chunks
   * NULL and nchunks 0 first, so that no reader finds a slot. */
  __atomic_store_n(&p->nchunks, 0, __ATOMIC_RELEASE);
  p->retired = p->chunks;
  p->retired_cap = p->chunks_cap;
  __atomic_store_n(&p->chunks, NULL, __ATOMIC_RELEASE);
  p->chunks_cap = p->capacity = p->next = p->busy = 0;
  p->bl_size = 0;
  p->bl_head = p->bl_tail = CP_SLOT_NIL;
  p->max_chunks = 0;               /* never grows again */
  p->released = 1;
  p->memory = sizeof *p + (uint64_t)p->nunterm * sizeof *p->unterm;
}

void cp_pool_set_max_chunks(cp_pool *p, uint32_t n) {
  if (n < p->max_chunks) p->max_chunks = n;
}

#define chunk_slot cp_pool_chunk_slot

cp_slot *cp_pool_slot_slow(cp_pool *p, uint32_t idx) {
  if (idx < p->capacity) return chunk_slot(p, idx);
  if (p->fb && idx >= CP_POOL_FB_BASE && idx - CP_POOL_FB_BASE < CP_POOL_FB_MAX) return p->fb[idx - CP_POOL_FB_BASE];
  return NULL;
}

static int grow_chunk(cp_pool *p);
static int grow(cp_pool *p) {
  const uint64_t o = cp_oneoff_begin();   /* oneoff.h: set-ups are timed whole */
  const int r = grow_chunk(p);
  cp_oneoff_end(o);
  return r;
}
static int grow_chunk(cp_pool *p) {
  if (p->nchunks >= p->max_chunks) return -1;
  if (p->nchunks == p->chunks_cap) {
    /* A new array, the old one kept (never freed): KernelCh on other
     * threads read it without the pool (cp_pool_peek_slot). */
    uint32_t ncap = p->chunks_cap ? p->chunks_cap * 2 : 4;
    cp_slot **nc = calloc(ncap + 1, sizeof *nc);   /* [ncap]: link to the array it replaced */
    if (!nc) return -1;
    if (p->nchunks) memcpy(nc, p->chunks, p->nchunks * sizeof *nc);
    nc[ncap] = (cp_slot *)(void *)p->chunks;
    p->memory += (uint64_t)(ncap + 1) * sizeof *nc;
    __atomic_store_n(&p->chunks, nc, __ATOMIC_RELEASE);
    p->chunks_cap = ncap;
  }
  cp_slot *c = chunk_get(p->chunk_size);   /* zeroed, on their own lines */
  if (!c) return -1;
  for (uint32_t i = 0; i < p->chunk_size; i++) c[i].lru_prev = c[i].lru_next = CP_SLOT_NIL;
  p->memory += (uint64_t)p->chunk_size * sizeof *c;
  __atomic_store_n(&p->chunks[p->nchunks], c, __ATOMIC_RELAXED);
  __atomic_store_n(&p->nchunks, p->nchunks + 1, __ATOMIC_RELEASE);   /* after the chunk: cp_pool_peek_slot */
  p->next = p->capacity;          /* continue round robin in the new chunk */
  p->capacity += p->chunk_size;
  if (p->nchunks == 1) {              /* slots first: see cp_pool_peek_live */
    __atomic_store_n(&p->slots0, c, __ATOMIC_RELEASE);
    __atomic_store_n(&p->cap0, p->chunk_size, __ATOMIC_RELEASE);
  }
  return 0;
}

void cp_pool_flush_span(cp_slot *s) {
  if (s->span_n && s->span_bad) cp_inc(&cp_thr_get()->gpu_dropped, 1);
  else if (s->span_n && s->span_max >= s->span_min)
    cp_profile_span(s->path, s->span_max - s->span_min, s->span_first, s->bytes);
  s->span_n = 0;
  s->span_bad = 0;
  __atomic_store_n(&s->span_first, 0, __ATOMIC_RELAXED);   /* read lock-free (parent_link.c, kc_span) */
}

void cp_pool_prepare(cp_pool *p) {
  if (p && p->nchunks == 0 && !p->released) (void)grow(p);
}

cp_slot *cp_pool_alloc_slow(cp_pool *p, uint32_t *idx) {
  if (p->released) { p->exhausted++; return NULL; }
  if (p->busy >= p->capacity && grow(p) != 0) {
    /* Every slot live or blacklisted and no chunk to be had: plain malloc. */
    if (!p->fb) {
      p->fb = calloc(CP_POOL_FB_MAX, sizeof *p->fb);
      if (!p->fb) { p->exhausted++; return NULL; }
      p->memory += CP_POOL_FB_MAX * sizeof *p->fb;
    }
    for (uint32_t i = 0; i < CP_POOL_FB_MAX; i++) {
      if (p->fb[i]) continue;
      cp_slot *s = cp_calloc_lines(sizeof *s);
      if (!s) break;
      do p->fb_gen++; while ((p->fb_gen & 0xFFu) == 0);
      s->gen = p->fb_gen;
      s->fallback = 1;
      s->lru_prev = s->lru_next = CP_SLOT_NIL;
      cp_pool_reset_slot(s);
      p->fb[i] = s;
      p->fallbacks++;
      *idx = CP_POOL_FB_BASE + i;
      return s;
    }
    p->exhausted++;
    return NULL;
  }
  uint32_t cap = p->capacity, i = p->next >= cap ? 0 : p->next;
  for (uint32_t n = 0; n < cap; n++) {
    cp_slot *s = chunk_slot(p, i);
    if (!s->live && s->refcnt == 0) {
      if (s->span_n) cp_pool_flush_span(s);   /* lazily account the old GPU span */
      cp_slot_next_gen(s);
      cp_pool_reset_slot(s);
      p->busy++;
      p->next = i + 1;
      *idx = i;
      return s;
    }
    if (++i == cap) i = 0;
  }
  return NULL;   /* unreachable: busy < capacity */
}

/* Inlined: every first reference and last unreference of a parent runs them. */
__attribute__((always_inline)) static inline void lru_unlink(cp_pool *p, cp_slot *s) {
  if (s->lru_prev != CP_SLOT_NIL) cp_pool_slot(p, s->lru_prev)->lru_next = s->lru_next;
  else p->bl_head = s->lru_next;
  if (s->lru_next != CP_SLOT_NIL) cp_pool_slot(p, s->lru_next)->lru_prev = s->lru_prev;
  else p->bl_tail = s->lru_prev;
  s->lru_prev = s->lru_next = CP_SLOT_NIL;
}

__attribute__((always_inline)) static inline void lru_append(cp_pool *p, cp_slot *s, uint32_t idx) {
  s->lru_prev = p->bl_tail;
  s->lru_next = CP_SLOT_NIL;
  if (p->bl_tail != CP_SLOT_NIL) cp_pool_slot(p, p->bl_tail)->lru_next = idx;
  else p->bl_head = idx;
  p->bl_tail = idx;
}

/* The slot leaves the blacklist; if its event also stopped it is free. */
__attribute__((always_inline)) static inline void bl_drop(cp_pool *p, cp_slot *s) {
  lru_unlink(p, s);
  p->bl_size--;
  s->refcnt = 0;
  __atomic_store_n(&s->hold, 0, __ATOMIC_RELAXED);   /* eviction ends a hold for KernelCh too */
  if (!s->live && !s->fallback) p->busy--;
}

/* Over the cap: evict from the LRU head (the least recently named). */
static void bl_enforce_cap(cp_pool *p) {
  while (p->bl_size > p->bl_cap && p->bl_head != CP_SLOT_NIL) {
    cp_slot *old = cp_pool_slot(p, p->bl_head);
    if (!old) break;
    p->evictions++;
    if (!atomic_flag_test_and_set(&evict_warned))
      cp_warn("blacklist full (COLLPROF_BLACKLIST_CAP=%llu): evicting stopped parents still named by live children "
              "or held for KernelCh; their late GPU spans and child times may be lost",
              (unsigned long long)p->bl_cap);
    bl_drop(p, old);
  }
}

/* A stopped parent named (a live one is counted inline, pool.h). */
void cp_pool_ref_slow(cp_pool *p, cp_slot *s, uint32_t idx) {
  if (s->live) { s->refcnt++; return; }
  if (s->refcnt == 0) {
    if (!s->fallback) p->busy++;               /* a released slot is held again */
    lru_append(p, s, idx);
    p->bl_size++;
    s->refcnt = 1;
    bl_enforce_cap(p);
    return;
  }
  if (p->bl_tail != idx) {
    lru_unlink(p, s);                          /* most recently named: to the tail */
    lru_append(p, s, idx);
  }
  s->refcnt++;
}

void cp_pool_list_stopped(cp_pool *p, cp_slot *s, uint32_t idx) {
  lru_append(p, s, idx);
  p->bl_size++;
  bl_enforce_cap(p);
}

/* Holds are taken at the Coll/P2p's own start, while it is live: counted
 * only; listed at its stop like any named parent. */
void cp_pool_hold(cp_pool *p, cp_slot *s, uint32_t idx, uint32_t n) {
  (void)idx;
  if (n == 0 || s->fallback || p->scratch || s->refcnt != 0 || !s->live) return;
  s->refcnt = n;
  __atomic_store_n(&s->hold, n, __ATOMIC_RELAXED);
}

void cp_pool_unref_slow(cp_pool *p, cp_slot *s, uint32_t idx) {
  (void)idx;
  if (s->refcnt == 0) return;                  /* evicted meanwhile */
  if (--s->refcnt == 0 && !s->live) {
    s->refcnt = 1;
    bl_drop(p, s);
  }
}

void cp_pool_unref_n(cp_pool *p, cp_slot *s, uint32_t idx, uint32_t n) {
  for (; n; n--) cp_pool_unref(p, s, idx);
}

void cp_pool_release_slow(cp_pool *p, cp_slot *s, uint32_t idx) {
  cp_slot_set_live(s, 0);
  if (s->fallback) {
    cp_pool_flush_span(s);
    if (p->fb && idx >= CP_POOL_FB_BASE && idx - CP_POOL_FB_BASE < CP_POOL_FB_MAX && p->fb[idx - CP_POOL_FB_BASE] == s)
      p->fb[idx - CP_POOL_FB_BASE] = NULL;
    free(s);
    return;
  }
  if (s->refcnt == 0) p->busy--;
}

void cp_pool_foreach(cp_pool *p, void (*fn)(const cp_slot *s, void *arg), void *arg) {
  for (uint32_t c = 0; c < p->nchunks; c++)
    for (uint32_t i = 0; i < p->chunk_size; i++) fn(&p->chunks[c][i], arg);
  if (p->fb)
    for (uint32_t i = 0; i < CP_POOL_FB_MAX; i++)
      if (p->fb[i]) fn(p->fb[i], arg);
}
