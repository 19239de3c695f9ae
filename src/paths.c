/*
 * paths.c — the call-path table (paths.h).
 *
 * Entries live in chunks of 256 published with release stores, so readers
 * (snapshot, trace writer, the hot path's cp_path_gpu_seen) never lock.  The
 * key of a lookup packs (parent:16, type index:4, func:32); the global index
 * is open addressing under a mutex, reached only on a per-thread cache miss.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#pragma GCC visibility push(hidden)
#include "nccl_profiler_abi.h"
#include "paths.h"
#include "mask_control.h"
#include "bump.h"
#include "oneoff.h"
#include "strtab.h"
#include "tls.h"

#define PCHUNK 256
#define PNCHUNK 256

typedef struct path_ent {
  const char *str;
  uint64_t hash;
  uint32_t parent, type, func;
  _Atomic uint8_t gpu_seen;
} path_ent;

static path_ent *_Atomic path_chunks[PNCHUNK];
#define path_count cp_hot.path_count
static pthread_mutex_t path_mu = PTHREAD_MUTEX_INITIALIZER;
typedef struct { uint64_t key1; uint32_t id; } hslot;
static hslot *path_hash;
static uint32_t path_hash_cap;
static _Atomic uint64_t path_mem;

static inline int type_index(uint32_t type) {
  if (type == 0 || (type & (type - 1)) || type > ncclProfileKernelLaunch) return -1;
  return __builtin_ctz(type);
}

const char *cp_type_short(uint32_t type) {
  const char *n = ncclProfileTypeName(type, 1);
  return n ? n : "Unknown";
}
const char *cp_type_nccl(uint32_t type) {
  const char *n = ncclProfileTypeName(type, 0);
  return n ? n : "ncclProfileUnknown";
}
int cp_type_has_func(uint32_t type) {
  /* Coll 2, P2p 4, ProxyOp 8, CollApi 512, P2pApi 1024 */
  return (type & CP_FUNC_TYPES) != 0 && (type & (type - 1)) == 0;
}

static inline path_ent *ent(uint32_t id) {
  if (id >= atomic_load_explicit(&path_count, memory_order_acquire)) return NULL;
  path_ent *c = atomic_load_explicit(&path_chunks[id / PCHUNK], memory_order_acquire);
  return c ? &c[id % PCHUNK] : NULL;
}

uint32_t cp_path_count(void) { return atomic_load_explicit(&path_count, memory_order_acquire); }
int cp_path_valid(uint32_t id) { return id < cp_path_count(); }
const char *cp_path_str(uint32_t id) { path_ent *e = ent(id); return e ? e->str : ""; }
uint64_t cp_path_hash(uint32_t id) { path_ent *e = ent(id); return e ? e->hash : 0; }
uint32_t cp_path_type(uint32_t id) { path_ent *e = ent(id); return e ? e->type : 0; }
uint32_t cp_path_func(uint32_t id) { path_ent *e = ent(id); return e ? e->func : 0; }
uint32_t cp_path_parent(uint32_t id) { path_ent *e = ent(id); return e ? e->parent : CP_PATH_NONE; }
uint64_t cp_path_memory(void) { return atomic_load_explicit(&path_mem, memory_order_relaxed); }

int cp_path_gpu_seen(uint32_t id) {
  path_ent *e = ent(id);
  return e ? atomic_load_explicit(&e->gpu_seen, memory_order_relaxed) : 0;
}

void cp_path_mark_gpu(uint32_t id) {
  for (int depth = 0; depth < 64; depth++) {
    path_ent *e = ent(id);
    if (!e || atomic_load_explicit(&e->gpu_seen, memory_order_relaxed)) return;
    atomic_store_explicit(&e->gpu_seen, 1, memory_order_relaxed);
    id = e->parent;
  }
}

#define make_key cp_path_key
#define key_hash cp_path_key_hash

static void hash_put(hslot *tab, uint32_t cap, uint64_t key1, uint32_t id) {
  for (uint32_t i = key_hash(key1 - 1) & (cap - 1);; i = (i + 1) & (cap - 1))
    if (!tab[i].key1) { tab[i].key1 = key1; tab[i].id = id; return; }
}

/* Build the string and the entry; path_mu held. */
static uint32_t create_locked(uint32_t parent, uint32_t type, uint32_t func) {
  uint32_t id = atomic_load_explicit(&path_count, memory_order_relaxed);
  if (id >= CP_PATH_MAX) return CP_PATH_NONE;
  if ((id + 1) * 2 > path_hash_cap) {
    uint32_t ncap = path_hash_cap ? path_hash_cap * 2 : 256;
    hslot *nt = calloc(ncap, sizeof *nt);
    if (!nt) return CP_PATH_NONE;
    for (uint32_t i = 0; i < path_hash_cap; i++)
      if (path_hash[i].key1) hash_put(nt, ncap, path_hash[i].key1, path_hash[i].id);
    free(path_hash);
    atomic_fetch_add_explicit(&path_mem, (ncap - path_hash_cap) * sizeof *nt, memory_order_relaxed);
    path_hash = nt;
    path_hash_cap = ncap;
  }
  path_ent *c = atomic_load_explicit(&path_chunks[id / PCHUNK], memory_order_relaxed);
  if (!c) {
    c = calloc(PCHUNK, sizeof *c);
    if (!c) return CP_PATH_NONE;
    atomic_fetch_add_explicit(&path_mem, PCHUNK * sizeof *c, memory_order_relaxed);
    atomic_store_explicit(&path_chunks[id / PCHUNK], c, memory_order_release);
  }
  const char *pre = parent == CP_PATH_NONE ? NULL
                  : parent == CP_PATH_UNKNOWN ? "UnknownParent"
                  : parent == CP_PATH_PXN ? "PXN" : cp_path_str(parent);
  const char *fs = func ? cp_str_get(func) : "", *ts = cp_type_short(type);
  /* "pre/Type:func", copied piece by piece: snprintf took 1,400 of the
   * 2,000 instructions a new path costs (callgrind), in the callback that
   * first meets it */
  const size_t lp = pre ? strlen(pre) : 0, lt = strlen(ts), lf = func ? strlen(fs) : 0;
  const size_t n = (pre ? lp + 1 : 0) + lt + (func ? lf + 1 : 0) + 1;
  char *s = cp_bump_alloc(n);   /* never freed; no malloc arena on NCCL's threads (bump.h) */
  if (!s) return CP_PATH_NONE;
  char *q = s;
  if (pre) { memcpy(q, pre, lp); q += lp; *q++ = '/'; }
  memcpy(q, ts, lt); q += lt;
  if (func) { *q++ = ':'; memcpy(q, fs, lf); q += lf; }
  *q = 0;
  atomic_fetch_add_explicit(&path_mem, n, memory_order_relaxed);
  path_ent *e = &c[id % PCHUNK];
  e->str = s;
  e->hash = XXH3_64bits(s, n - 1);
  e->parent = parent;
  e->type = type;
  e->func = func;
  atomic_store_explicit(&e->gpu_seen, 0, memory_order_relaxed);
  atomic_store_explicit(&path_count, id + 1, memory_order_release);
  return id;
}

uint32_t cp_path_probe(uint32_t parent, uint32_t type, uint32_t func) {
  int ti = type_index(type);
  if (ti < 0) return CP_PATH_NONE;
  if (!cp_type_has_func(type)) func = 0;
  uint64_t key1 = make_key(parent, ti, func) + 1;
  cp_pcache_ent *ce = &cp_thr_get()->pcache[key_hash(key1 - 1) & (CP_PCACHE - 1)];
  return ce->key1 == key1 ? ce->id : CP_PATH_NONE;
}

uint32_t cp_path_child(uint32_t parent, uint32_t type, uint32_t func) {
  int ti = type_index(type);
  if (ti < 0) return CP_PATH_NONE;
  if (!cp_type_has_func(type)) func = 0;
  if (parent >= CP_PATH_MAX && parent != CP_PATH_NONE && parent != CP_PATH_UNKNOWN && parent != CP_PATH_PXN)
    parent = CP_PATH_UNKNOWN;
  uint64_t key1 = make_key(parent, ti, func) + 1;
  uint32_t h = key_hash(key1 - 1);
  cp_pcache_ent *ce = &cp_thr_get()->pcache[h & (CP_PCACHE - 1)];
  if (__builtin_expect(ce->key1 == key1, 1)) return ce->id;
  uint32_t id = CP_PATH_NONE;
  pthread_mutex_lock(&path_mu);
  if (path_hash) {
    for (uint32_t i = h & (path_hash_cap - 1);; i = (i + 1) & (path_hash_cap - 1)) {
      if (!path_hash[i].key1) break;
      if (path_hash[i].key1 == key1) { id = path_hash[i].id; break; }
    }
  }
  if (id == CP_PATH_NONE && (parent >= CP_PATH_MAX || cp_path_valid(parent))) {
    const uint64_t o = cp_oneoff_begin();   /* oneoff.h: a new path, once */
    id = create_locked(parent, type, func);
    cp_oneoff_end(o);
    if (id != CP_PATH_NONE) hash_put(path_hash, path_hash_cap, key1, id);
  }
  pthread_mutex_unlock(&path_mu);
  if (id != CP_PATH_NONE) { ce->key1 = key1; ce->id = id; }
  return id;
}
