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

uint32_t cp_str_intern(const char *s);
const char *cp_str_get(uint32_t id);      /* never NULL; unknown id -> "" */
/* Bytes held by the table (for the summary's memoryBytes). */
uint64_t cp_str_memory(void);

#endif
