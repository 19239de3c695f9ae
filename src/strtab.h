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

/* Hot path: cp_str_intern with the caller's thread block, the cache hit
 * inlined (pointer match confirmed by strcmp against the interned text). */
static inline uint32_t cp_str_intern_t(struct cp_thr *t, const char *s) {
  if (!s || !*s) return 0;
  uintptr_t p = (uintptr_t)s;
  cp_scache_ent *e = &t->scache[((p >> 3) ^ (p >> 11)) & (CP_SCACHE - 1)];
  if (__builtin_expect(e->p == s && e->id && strcmp(e->str, s) == 0, 1)) return e->id;
  return cp_str_intern(s);
}
/* Bytes held by the table (for the summary's memoryBytes). */
uint64_t cp_str_memory(void);

#endif
