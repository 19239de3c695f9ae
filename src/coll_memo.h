/*
 * coll_memo.h — what a recorded Coll's start looked up, remembered per
 * thread, so that the next call's identical Coll finds it in one line.
 *
 * With KernelCh on (every call under COLLPROF_GPU_SAMPLE=1, one in N by
 * default) a call's Coll is recorded, even in a call that is otherwise
 * only counted: its KernelCh need its slot for the call's GPU span.  Its
 * start interned four strings (func, datatype, and for the trace record
 * algo and proto: a cache entry and NCCL's string each), took the
 * datatype's size for the bytes and looked up its path: some 250
 * instructions of the 600 such a start took (collprof-bench proxy mode,
 * callgrind), every value the same at every call of a loop.
 *
 * So, as counted_memo.h does for counted events, the first recorded start
 * of each (parent path, func, datatype, algo and proto strings, count)
 * fills an entry with the results, and the next compares the key in that
 * one line.  The same assumption as there: NCCL's strings are compared by
 * address, not content (NCCL passes pointers to its own constant
 * strings).  Only a real path is remembered, with algo and proto ids that
 * a compact trace record holds (trace.h, cp_erec_coll_pack); anything
 * else takes the long way every time.  Entries never go stale: path and
 * string ids never change.  The shared emergency block (tls.h) remembers
 * nothing.  Direct mapped, 8 entries: the calls of a loop have a few
 * Colls.
 */
#ifndef COLLPROF_COLL_MEMO_H
#define COLLPROF_COLL_MEMO_H
#include <stdint.h>
#include "nccl_profiler_abi.h"
#include "tls.h"
#include "strtab.h"

/* The entry a Coll under parent (a path id or CP_PATH_NONE) goes to. */
static inline cp_rmemo_ent *cp_rmemo_slot(cp_thr *t, uint32_t parent, const ncclProfilerEventDescr_v5_t *d) {
  const uint64_t h = ((uint64_t)(uintptr_t)d->coll.func ^ (uint64_t)d->coll.count ^ (uint64_t)parent << 20) *
                     0x9E3779B97F4A7C15ull;
  return &t->rmemo[h >> 61];
}
_Static_assert(CP_RMEMO == 8, "cp_rmemo_slot: three bits of the hash");

/* e holds exactly this Coll's key (an empty entry, parent1 0, none). */
static inline __attribute__((always_inline)) int cp_rmemo_holds(const cp_rmemo_ent *e, uint32_t parent,
                                                                const ncclProfilerEventDescr_v5_t *d) {
  return e->parent1 == parent + 1 && e->func == d->coll.func && e->count == d->coll.count &&
         e->dt == d->coll.datatype && e->algo == d->coll.algo && e->proto == d->coll.proto;
}

/* Remember a Coll's lookups: its path (real: below CP_PATH_PXN, checked
 * by the caller), func and datatype ids and bytes; algo and proto are
 * interned here (the caller's trace record may not have needed them).
 * Nothing is remembered where their ids do not fit a byte. */
static inline void cp_rmemo_fill(cp_thr *t, cp_rmemo_ent *e, uint32_t parent, const ncclProfilerEventDescr_v5_t *d,
                                 uint32_t path, uint32_t func_id, uint32_t dt_id, uint64_t bytes) {
  if (t == &cp_thr_emergency) return;
  const uint32_t algo = cp_str_intern_t(t, d->coll.algo), proto = cp_str_intern_t(t, d->coll.proto);
  if ((algo | proto) > 0xFFu) return;
  e->func = d->coll.func;
  e->dt = d->coll.datatype;
  e->algo = d->coll.algo;
  e->proto = d->coll.proto;
  e->count = d->coll.count;
  e->bytes = bytes;
  e->path = (uint16_t)path;
  e->algo_id = (uint8_t)algo;
  e->proto_id = (uint8_t)proto;
  e->func_id = func_id;
  e->dt_id = dt_id;
  e->parent1 = parent + 1;
}

#endif
