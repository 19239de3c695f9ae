/*
 * pset.h — packed path sets, the unit of collation: one byte buffer per set
 * of unique call paths (ordered by (hash, path bytes)) with their combined
 * numbers, plus the run counters, hosts, communicators and frozen event
 * masks of the ranks it covers.  The same bytes are built from one rank, merged, sent over MPI
 * (mpi_wrap/tree_collate.c) and read back, so a path that only one input
 * has is forwarded by one memcpy, never decoded; only paths present in
 * several inputs are decoded, combined (merge.h: exact integer sums,
 * min/max with the lowest rank on ties) and re-encoded.
 *
 * Merging is k-way over inputs that are each sorted: one linear pass, each
 * record touched once.  The output is either another packed set (to send
 * up the tree) or the summary itself (rank 0 / the offline tool: strings
 * copied into the summary's own storage, numbers decoded once), and for
 * every input record the index of its path in the output, so global ids
 * (= output positions at the root) map back to every input.  Because the
 * result does not depend on how inputs are grouped, the MPI tree and the
 * offline tool produce identical summaries.
 *
 * Memory: big buffers are mmap'd (cp_pbuf) so that RSS follows what is
 * used; while merging into the summary, the pages of the inputs already
 * consumed are given back (madvise), so the root holds about one copy of
 * the data, not two.
 *
 * Layout (native byte order: one job runs on one architecture):
 *   header  u64 magic, u64 set_len (header+records; bytes after it are the
 *           caller's trailer), u64 npaths, u32 nhosts, u32 ncomms,
 *           u32 nfrozen, cp_agg, hosts {u64 ranks, u32 len, bytes}, comms
 *           {u64 id, members, events, u32 nranks, nnodes, len, bytes},
 *           frozen masks (frozen.h: one per reason, ranks as ranges)
 *   record  u64 hash, var rest_len, var plen, path, NUL, var flen, func,
 *           NUL, var leaf_type, 15 var numbers (LEB128 varints)
 * MPI-free.
 */
#ifndef COLLPROF_PSET_H
#define COLLPROF_PSET_H
#include "merge.h"

/* A byte buffer, mmap'd when large. */
typedef struct cp_pbuf {
  unsigned char *p;
  size_t len, cap;
  size_t released;       /* pages below this offset were given back */
} cp_pbuf;

/* 0, -1 on no memory.  Untouched capacity costs no RSS. */
int cp_pbuf_alloc(cp_pbuf *b, size_t cap);
/* The same for a buffer that will be written whole (a receive): its pages
 * are mapped at once. */
int cp_pbuf_alloc_full(cp_pbuf *b, size_t cap);
void cp_pbuf_free(cp_pbuf *b);

/* One rank's set into *out (allocated here).  l2i (may be NULL): for each
 * r->paths[i], its index in the set (equal strings of one rank share one).
 * Strings are copied; r may be freed afterwards.  0, -1 on no memory. */
int cp_pset_from_rank(const cp_rank_data *r, int hash_bits, cp_pbuf *out, uint32_t *l2i);

/* An empty set (a rank that cannot take part still answers).  0 / -1. */
int cp_pset_empty(cp_pbuf *out);

/* Header of a set: path count and set_len.  0, -1 when malformed. */
int cp_pset_count(const unsigned char *buf, size_t len, uint64_t *npaths, uint64_t *set_len);

/* k-way merge of in[0..k-1].
 *   maps[i] (may be NULL): filled with the output index of each record of
 *           in[i] (UINT32_MAX where input i was damaged);
 *   out     (may be NULL): the merged set, allocated here with room for
 *           `trailer` more bytes after set_len;
 *   sum     (may be NULL): the summary's paths, hosts, comms and agg are
 *           filled (strings owned by the summary); the caller sets the
 *           configuration fields first and calls cp_summary_finish after.
 *   set_bytes (may be NULL): size the merged set has (or would have) packed.
 *   npaths  (may be NULL): paths in the result.
 * With sum, input pages are given back while merging (inputs stay
 * allocated but must not be read again; free them after).  Returns 0; -1 if an input was damaged (it counts as empty
 * from the damage on) or memory ran out (the result is then partial). */
int cp_pset_merge(cp_pbuf *in, size_t k, uint32_t *const *maps, cp_pbuf *out, size_t trailer,
                  cp_summary *sum, uint64_t *set_bytes, uint64_t *npaths);

/* Frees the storage a merge gave a summary (cp_summary.owner; NULL ok). */
void cp_sumstore_free(void *owner);

#endif
