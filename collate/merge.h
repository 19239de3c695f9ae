/*
 * merge.h — the unit of collation: a sorted set of unique call paths with
 * their combined numbers, plus the run-level counters, hosts and
 * communicators of the ranks it covers (a "subtree" of ranks online, any
 * group of ranks offline).
 *
 * Paths are ordered by (hash, path bytes) and unique by that pair; two
 * paths with one hash and different strings stay two entries (a hash
 * collision, counted by the summary, never merged).  Merging two sets is a
 * linear merge that combines the numbers of equal paths exactly (integer
 * sums, min/max with the lowest rank on ties), so the result does not
 * depend on the order or grouping of merges: the MPI tree and the offline
 * tool get identical sets.
 *
 * A set is packed into one byte buffer (native byte order: one job runs on
 * one architecture) to travel over MPI; unpacking points the strings into
 * that buffer, so the buffer must outlive the set.  MPI-free.
 */
#ifndef COLLPROF_MERGE_H
#define COLLPROF_MERGE_H
#include "rundata.h"

typedef struct cp_mpath {
  uint64_t hash;           /* truncated to hash_bits */
  const char *path;        /* not owned, not NUL-terminated when from a buffer: use plen */
  uint32_t plen;
  uint32_t leaf_type;
  const char *func;        /* not owned; flen bytes */
  uint32_t flen;
  cp_pstat s;
} cp_mpath;

typedef struct cp_mhost { const char *name; uint32_t len; uint64_t ranks; } cp_mhost;

typedef struct cp_mcomm {
  uint64_t comm_id;
  const char *name; uint32_t nlen;
  int32_t nranks, nnodes;
  uint64_t members, events;
} cp_mcomm;

typedef struct cp_mset {
  cp_agg agg;
  size_t nhosts;  cp_mhost *hosts;   /* sorted by name bytes */
  size_t ncomms;  cp_mcomm *comms;   /* sorted by comm_id */
  size_t npaths;  cp_mpath *paths;   /* sorted by (hash, path bytes) */
} cp_mset;

/* The set of one rank.  Strings point into r (keep it alive).
 * local_to_idx (may be NULL): for each r->paths[i], its index in out->paths
 * (equal strings of one rank share an index).  Returns 0, -1 on no memory. */
int cp_mset_from_rank(const cp_rank_data *r, int hash_bits, cp_mset *out,
                      uint32_t *local_to_idx);

/* out = a U b.  amap[i] / bmap[j] (may be NULL): index in out of
 * a->paths[i] / b->paths[j].  Strings point where a's and b's did. */
int cp_mset_merge(const cp_mset *a, const cp_mset *b, cp_mset *out,
                  uint32_t *amap, uint32_t *bmap);

/* Arrays freed; strings are not owned. */
void cp_mset_free(cp_mset *m);

/* Pack into a malloc'd buffer (*buf, *len).  0 on success. */
int cp_mset_pack(const cp_mset *m, unsigned char **buf, size_t *len);
/* Bytes cp_mset_pack would produce. */
size_t cp_mset_packed_size(const cp_mset *m);
/* Unpack; the set's strings point into buf.  0 on success, -1 malformed. */
int cp_mset_unpack(const unsigned char *buf, size_t len, cp_mset *out);

/* Order of two paths: by hash, then bytes, then length. */
int cp_mpath_cmp(const cp_mpath *a, const cp_mpath *b);

/* Combine numbers of one path from two disjoint groups of ranks. */
void cp_pstat_combine(cp_pstat *into, const cp_pstat *from);
/* The numbers of one path of one rank. */
void cp_pstat_from_rec(cp_pstat *s, const cp_path_rec *p, int rank);
void cp_agg_init(cp_agg *a);
void cp_agg_combine(cp_agg *into, const cp_agg *from);

#endif
