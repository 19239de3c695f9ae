/*
 * strtab.c — interned strings (strtab.h).
 *
 * Storage: a two-level array of string pointers (chunks of 1024, published
 * with release stores) so cp_str_get() never locks.  Each text is followed
 * in its allocation by its JSON form (cp_str_json), made once here so the
 * trace writer copies it instead of escaping it on every line.  Lookup by content: an
 * open-addressing hash table under a mutex, only on a per-thread cache miss.
 * The per-thread cache is keyed by NCCL's pointer and a hit is confirmed
 * against the text, kept in the entry when short (tls.h, cp_scache_ent),
 * else the interned copy: a pointer that was freed and reused for another
 * string (the replay tool, communicator names) cannot return a stale id.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#pragma GCC visibility push(hidden)
#include "strtab.h"
#include "json_escape.h"
#include "bump.h"
#include "oneoff.h"
#include "tls.h"

#define STR_CHUNK 1024
#define STR_NCHUNK 1024
#define STR_MAXLEN 1024

static char *_Atomic *_Atomic str_chunks[STR_NCHUNK];
static _Atomic uint32_t str_count = 1;      /* id 0 is "" */
static pthread_mutex_t str_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t *str_hash;                  /* ids, 0 = empty */
static uint32_t str_hash_cap;
static _Atomic uint64_t str_mem;

const char *cp_str_get(uint32_t id) {
  if (id == 0 || id >= atomic_load_explicit(&str_count, memory_order_acquire)) return "";
  char *_Atomic *c = atomic_load_explicit(&str_chunks[id / STR_CHUNK], memory_order_acquire);
  if (!c) return "";
  const char *s = atomic_load_explicit(&c[id % STR_CHUNK], memory_order_acquire);
  return s ? s : "";
}

const char *cp_str_json(uint32_t id, size_t *len) {
  if (id == 0) { *len = 2; return "\"\""; }
  const char *s = cp_str_get(id);
  if (!*s) { *len = 2; return "\"\""; }   /* unknown id */
  const char *after = s + strlen(s) + 1;
  uint16_t jl;
  memcpy(&jl, after, sizeof jl);
  *len = jl;
  return after + sizeof jl;
}

static int hash_insert(uint32_t *tab, uint32_t cap, uint32_t id) {
  const char *s = cp_str_get(id);
  uint64_t h = XXH3_64bits(s, strlen(s));
  for (uint32_t i = (uint32_t)h & (cap - 1);; i = (i + 1) & (cap - 1))
    if (!tab[i]) { tab[i] = id; return 0; }
}

static uint32_t intern_locked(const char *s, size_t n) {
  uint64_t h = XXH3_64bits(s, n);
  if (str_hash) {
    for (uint32_t i = (uint32_t)h & (str_hash_cap - 1);; i = (i + 1) & (str_hash_cap - 1)) {
      uint32_t id = str_hash[i];
      if (!id) break;
      const char *t = cp_str_get(id);
      if (strncmp(t, s, n) == 0 && t[n] == 0) return id;
    }
  }
  uint32_t id = atomic_load_explicit(&str_count, memory_order_relaxed);
  if (id >= STR_CHUNK * STR_NCHUNK) return 0;
  if ((id + 1) * 2 > str_hash_cap) {            /* grow the index first */
    uint32_t ncap = str_hash_cap ? str_hash_cap * 2 : 256;
    uint32_t *nt = calloc(ncap, sizeof *nt);
    if (!nt) return 0;
    for (uint32_t i = 0; i < str_hash_cap; i++) if (str_hash[i]) hash_insert(nt, ncap, str_hash[i]);
    free(str_hash);
    atomic_fetch_add_explicit(&str_mem, (ncap - str_hash_cap) * sizeof *nt, memory_order_relaxed);
    str_hash = nt;
    str_hash_cap = ncap;
  }
  char *_Atomic *c = atomic_load_explicit(&str_chunks[id / STR_CHUNK], memory_order_relaxed);
  if (!c) {
    c = calloc(STR_CHUNK, sizeof *c);
    if (!c) return 0;
    atomic_fetch_add_explicit(&str_mem, STR_CHUNK * sizeof *c, memory_order_relaxed);
    atomic_store_explicit(&str_chunks[id / STR_CHUNK], c, memory_order_release);
  }
  /* The text, then its JSON form (quoted, escaped, at most CP_STR_JSON_MAX
   * escaped bytes: what the trace writes for it) and that form's length. */
  char js[CP_STR_JSON_MAX + 2];
  size_t jn = 0;
  char tmp[STR_MAXLEN + 1];
  memcpy(tmp, s, n);
  tmp[n] = 0;
  js[jn++] = '"';
  jn += cp_json_escape_str(js + jn, CP_STR_JSON_MAX, tmp);
  js[jn++] = '"';
  char *copy = cp_bump_alloc_str(n + 1 + sizeof(uint16_t) + jn);   /* never freed (bump.h) */
  if (!copy) return 0;
  memcpy(copy, s, n);
  copy[n] = 0;
  const uint16_t jl = (uint16_t)jn;
  memcpy(copy + n + 1, &jl, sizeof jl);
  memcpy(copy + n + 1 + sizeof jl, js, jn);
  atomic_fetch_add_explicit(&str_mem, n + 1 + sizeof jl + jn, memory_order_relaxed);
  atomic_store_explicit(&c[id % STR_CHUNK], copy, memory_order_release);
  atomic_store_explicit(&str_count, id + 1, memory_order_release);
  hash_insert(str_hash, str_hash_cap, id);
  return id;
}

uint32_t cp_str_intern(const char *s) {
  if (!s || !*s) return 0;
  cp_thr *t = cp_thr_get();
  uintptr_t p = (uintptr_t)s;
  cp_scache_ent *e = &t->scache[((p >> 3) ^ (p >> 11)) & (CP_SCACHE - 1)];
  if (cp_scache_hit(e, s)) return e->id;
  size_t n = strnlen(s, STR_MAXLEN);
  const uint64_t o = cp_oneoff_begin();   /* oneoff.h: rare (a new string, or a cache miss) */
  pthread_mutex_lock(&str_mu);
  uint32_t id = intern_locked(s, n);
  pthread_mutex_unlock(&str_mu);
  cp_oneoff_end(o);
  if (id) {
    const char *copy = cp_str_get(id);
    const size_t len = strlen(copy);
    memset(&e->u, 0, sizeof e->u);
    if (len < sizeof e->u.head) memcpy(e->u.head, copy, len + 1);
    else e->u.str = copy;
    e->len = (uint32_t)len;
    e->p = s;
    e->id = id;
  }
  return id;
}

uint64_t cp_str_memory(void) { return atomic_load_explicit(&str_mem, memory_order_relaxed); }
