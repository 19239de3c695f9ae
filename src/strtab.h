/*
 * strtab.h — interned strings: NCCL's func/datatype/algo/proto names and
 * communicator names become small integer ids.
 *
 * Records and path elements carry ids, not NCCL's pointers, so they stay
 * valid whatever NCCL does with its strings, and comparing two names is
 * comparing two integers.  cp_str_intern() hits a per-thread cache keyed by
 * the pointer (no lock) and takes the table lock only for a pointer it has
 * not seen.  Id 0 is "" (and NULL).  Ids are never reused or freed.
 */
#ifndef COLLPROF_STRTAB_H
#define COLLPROF_STRTAB_H
#include <stdint.h>
#include <string.h>
#include "tls.h"

uint32_t cp_str_intern(const char *s);
const char *cp_str_get(uint32_t id);      /* never NULL; unknown id -> "" */
/* The string as a JSON string: quoted, escaped, at most CP_STR_JSON_MAX
 * escaped bytes between the quotes (longer texts are cut there, as the
 * trace writer's jf_str would); *len gets its length.  Not NUL-terminated. */
#define CP_STR_JSON_MAX 256
const char *cp_str_json(uint32_t id, size_t *len);

/* n bytes (2-16) of a and b alike: two loads of each, overlapping where n
 * is not a power of two, none past either end. */
static inline int cp_str_same_short(const char *a, const char *b, uint32_t n) {
  if (n >= 8) {
    uint64_t a0, b0, a1, b1;
    memcpy(&a0, a, 8); memcpy(&b0, b, 8); memcpy(&a1, a + n - 8, 8); memcpy(&b1, b + n - 8, 8);
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
  }
  if (n >= 4) {
    uint32_t a0, b0, a1, b1;
    memcpy(&a0, a, 4); memcpy(&b0, b, 4); memcpy(&a1, a + n - 4, 4); memcpy(&b1, b + n - 4, 4);
    return ((a0 ^ b0) | (a1 ^ b1)) == 0;
  }
  uint16_t a0, b0, a1, b1;
  memcpy(&a0, a, 2); memcpy(&b0, b, 2); memcpy(&a1, a + n - 2, 2); memcpy(&b1, b + n - 2, 2);
  return ((a0 ^ b0) | (a1 ^ b1)) == 0;
}
/* The cache entry e holds s: its pointer, and still its text, NUL
 * included (a pointer freed and reused for another string must not return
 * a stale id: strtab.c).  s is not empty, so the compare is 2-16 bytes. */
static inline int cp_scache_hit(const cp_scache_ent *e, const char *s) {
  if (e->p != s || !e->id) return 0;
  return e->len < sizeof e->u.head ? cp_str_same_short(e->u.head, s, e->len + 1) : strcmp(e->u.str, s) == 0;
}
/* Hot path: cp_str_intern with the caller's thread block, the cache hit
 * inlined. */
static inline uint32_t cp_str_intern_t(struct cp_thr *t, const char *s) {
  if (!s || !*s) return 0;
  uintptr_t p = (uintptr_t)s;
  cp_scache_ent *e = &t->scache[((p >> 3) ^ (p >> 11)) & (CP_SCACHE - 1)];
  if (__builtin_expect(cp_scache_hit(e, s), 1)) return e->id;
  return cp_str_intern(s);
}
/* Bytes held by the table (for the summary's memoryBytes). */
uint64_t cp_str_memory(void);

#endif
