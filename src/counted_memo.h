/*
 * counted_memo.h — what a counted event's start looked up, remembered per
 * thread, so that the next call's identical event finds it in one line.
 *
 * Under host sampling most API calls are only counted (call_modes.h, "Host
 * sampling"): each of their events adds one to its path's calls (bytes
 * for a Coll/P2p) and gets a handle that names the path.  Finding that
 * path costs the most of such a start: the func and datatype strings
 * interned (a cache entry, our copy of the string and NCCL's string, each
 * compared), the path cache, the profile chunk, the datatype's size; each
 * a cache line that NCCL's own work between two callbacks has evicted
 * (test/bench/lines_per_event.sh).  Yet in a loop every call sends the
 * same events with the same descriptor values, and a counted parent's
 * handle is the same value at every call (generation 0, no slot).
 *
 * So the first counted start of each (parent path, type, func string,
 * datatype string, count) fills an entry of a small two-way table in the
 * thread's block (tls.h) with the path, the thread's profile entry of
 * that path and the bytes; the next one compares the key in that one line
 * and goes straight to counting.  The result is what the full lookup
 * gives, since every input of that lookup is in the key, with one
 * assumption: NCCL's func and datatype strings are compared by address,
 * not content.  NCCL passes pointers to its own constant strings, as
 * start_common.h's api_bytes already relies on; a string at a reused address
 * with other text could only come from a library unloaded and another
 * loaded at its place while the thread keeps running.
 *
 * Entries never go stale otherwise: path ids never change, a thread's
 * profile chunks are never freed (a block handed to a new thread keeps
 * them), and the parent is named by its path id, not its handle, so the
 * same entry serves every communicator.  The block threads share when no
 * block of their own could be allocated (tls.h) has no memo: find finds
 * nothing there and fill fills nothing.
 */
#ifndef COLLPROF_COUNTED_MEMO_H
#define COLLPROF_COUNTED_MEMO_H
#include <stdint.h>
#include "nccl_profiler_abi.h"
#include "tls.h"

/* The key fields of an event's descriptor: func and datatype string
 * addresses and count, 0 where the type has none. */
typedef struct cp_cmemo_key {
  const char *func, *dt;
  uint64_t count;
} cp_cmemo_key;

static inline __attribute__((always_inline)) cp_cmemo_key cp_cmemo_key_of(const ncclProfilerEventDescr_v5_t *d,
                                                                          uint32_t type) {
  cp_cmemo_key k = {0, 0, 0};
  switch (type) {
  case ncclProfileCollApi: k.func = d->collApi.func; k.dt = d->collApi.datatype; k.count = d->collApi.count; break;
  case ncclProfileP2pApi: k.func = d->p2pApi.func; k.dt = d->p2pApi.datatype; k.count = d->p2pApi.count; break;
  case ncclProfileColl: k.func = d->coll.func; k.dt = d->coll.datatype; k.count = d->coll.count; break;
  case ncclProfileP2p: k.func = d->p2p.func; k.dt = d->p2p.datatype; k.count = d->p2p.count; break;
  case ncclProfileProxyOp: k.count = d->proxyOp.isSend != 0; break;   /* its element: Send or Recv */
  default: break;
  }
  return k;
}

/* The two entries (a set: slots 2i and 2i+1) that may hold (parent path,
 * type, count) in t's table.  Two ways, because any index puts some two
 * events of a loop's call on one set (in the bench's call of 12 events,
 * with one entry per index, the CollApi and a ProxyStep took turns and a
 * sixth of the starts missed).  Not a random hash: the events of one call
 * have paths created together, so parent id times the 12 types plus the
 * type's index spreads them; the count's share shifts the events of one
 * size together, so that calls of a few sizes in turn keep entries of
 * their own. */
static inline cp_cmemo_ent *cp_cmemo_set(cp_thr *t, uint32_t parent, uint32_t type, uint64_t count) {
  const uint32_t c = (uint32_t)((count * 0x9E3779B97F4A7C15ull) >> 58);
  return &t->cmemo[(parent * 12u + (uint32_t)__builtin_ctz(type) + c) & (CP_CMEMO - 2)];
}
static inline uint64_t cp_cmemo_pt(uint32_t parent, uint32_t type) { return (uint64_t)parent << 32 | type; }
static inline __attribute__((always_inline)) int cp_cmemo_holds(const cp_cmemo_ent *e, uint64_t pt,
                                                                const cp_cmemo_key *k) {
  return e->pt == pt && e->func == k->func && e->dt == k->dt && e->count == k->count;
}

/* The entry that holds exactly this event's key, or NULL.  An empty entry
 * (pt 0: type 0 is no event's) holds no key, and the shared emergency
 * block's entries stay empty (fill), so neither needs a test here. */
static inline __attribute__((always_inline)) const cp_cmemo_ent *cp_cmemo_find(cp_thr *t, uint32_t parent,
                                                                              uint32_t type,
                                                                              const cp_cmemo_key *k) {
  const cp_cmemo_ent *e = cp_cmemo_set(t, parent, type, k->count);
  const uint64_t pt = cp_cmemo_pt(parent, type);
  if (__builtin_expect(cp_cmemo_holds(e, pt, k), 1)) return e;
  return cp_cmemo_holds(e + 1, pt, k) ? e + 1 : NULL;
}

/* Remember a counted start's lookup: the handle bits of its path
 * (hbits), this thread's profile entry of it (not NULL), bytes (Coll/P2p:
 * the profile's; CollApi/P2pApi: count x datatype size, for the GPU
 * sampling rule) and, for a Coll/P2p with bytes, its size class's calls
 * counter (not NULL: else the caller fills nothing).  What a hit does then
 * is add and store, nothing computed.  An empty way takes it; with both
 * full, the first way's moves to the second (the first holds the latest),
 * so that two keys of one set settle in a way each. */
static inline void cp_cmemo_fill(cp_thr *t, uint32_t parent, uint32_t type, const cp_cmemo_key *k, uint64_t hbits,
                                 cp_prof_ent *prof, uint64_t bytes, uint64_t *cls_calls) {
  if (t == &cp_thr_emergency) return;
  cp_cmemo_ent *e = cp_cmemo_set(t, parent, type, k->count);
  if (e->pt != 0) {
    if (e[1].pt == 0) e++;
    else e[1] = e[0];
  }
  e->pt = cp_cmemo_pt(parent, type);
  e->func = k->func;
  e->dt = k->dt;
  e->count = k->count;
  e->prof = prof;
  e->hbits = hbits;
  e->bytes = bytes;
  e->cls_calls = cls_calls;
}

#endif
