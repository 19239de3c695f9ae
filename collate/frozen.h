/*
 * frozen.h — the ranks whose event mask froze, grouped by reason (the rank
 * record's maskFrozen; rundata.h cp_frozen), while they travel with the
 * path sets (pset.h): one entry per reason, its ranks as sorted ranges.
 * Ranges keep the message small when whole blocks of ranks freeze for the
 * same reason (every rank of a CUDA-graph program does), and binomial
 * subtrees are blocks of consecutive ranks, so merging coalesces them.
 * Combining is a set union, so its result does not depend on the order or
 * grouping of merges: online and offline collation agree.  MPI-free.
 *
 * Packed form (native byte order, unaligned), `count` entries one after
 * the other: u32 len, reason bytes (no NUL), u32 nranges, nranges x
 * (i32 lo, i32 hi).
 */
#ifndef COLLPROF_FROZEN_H
#define COLLPROF_FROZEN_H
#include "rundata.h"

/* A working entry.  reason is borrowed (not NUL-terminated: len bytes);
 * ranges is malloc'd and owned by the entry. */
typedef struct cp_frz {
  const char *reason;
  uint32_t len;
  uint32_t nranges;
  cp_rank_range *ranges;
} cp_frz;

/* One rank's entry; 0 when its mask did not freeze (nothing to carry),
 * 1 with *e set, -1 on no memory. */
int cp_frz_from_rank(const cp_rank_data *r, cp_frz *e);

/* Entries [0, n) in any order, reasons possibly repeated: one per reason,
 * by reason bytes, ranges sorted and coalesced.  Ranges of merged-away
 * entries are freed.  Returns the new count; on no memory the entries
 * that could not be merged are dropped (their ranks lost, never invented). */
size_t cp_frz_combine(cp_frz *v, size_t n);

void cp_frz_free(cp_frz *v, size_t n);

/* Packed size of v[0, n), and packing it at p (that many bytes free). */
size_t cp_frz_packed_size(const cp_frz *v, size_t n);
size_t cp_frz_pack(unsigned char *p, const cp_frz *v, size_t n);

/* Bytes `count` packed entries at p take, or 0 when they do not fit
 * before end (damaged). */
size_t cp_frz_packed_span(const unsigned char *p, const unsigned char *end, uint32_t count);

/* Unpack `count` entries at p (checked by cp_frz_packed_span) into out,
 * reasons pointing into p.  0, -1 on no memory (out then holds none). */
int cp_frz_unpack(const unsigned char *p, uint32_t count, cp_frz *out);

/* Ranks in ranges r[0, n) (disjoint, as cp_frz_combine leaves them). */
uint64_t cp_frz_nranks(const cp_rank_range *r, size_t n);

/* "0-3,5,8-9" into b (n bytes); ends in ",..." when it does not fit. */
void cp_rank_ranges_text(char *b, size_t n, const cp_rank_range *r, size_t nr);

/* Summary order: by lowest rank. */
void cp_frozen_sort(cp_frozen *v, size_t n);

#endif
