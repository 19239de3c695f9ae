/*
 * profile.h — the numbers per call path, updated at event stop in O(1).
 *
 * Each thread adds into its own array indexed by path id (tls.h), so the hot
 * path writes no cache line another thread writes; cp_profile_merge() sums
 * every thread's array at snapshot time.  Single writer per array, relaxed
 * atomics (ThreadSanitizer-clean).
 */
#ifndef COLLPROF_PROFILE_H
#define COLLPROF_PROFILE_H
#include <stdint.h>
#include <stddef.h>
#include "collprof.h"
#include "tls.h"
#include "gpu_estimate.h"

/* One stopped event: duration, self time (duration minus children that
 * started and stopped inside it), bytes (Coll/P2p). */
void cp_profile_stop(uint32_t path, uint64_t dur_ns, uint64_t self_ns, uint64_t bytes);
/* One state record of an event on this path. */
void cp_profile_state(uint32_t path);
/* One GPU sample: a KernelCh duration. */
void cp_profile_gpu(uint32_t path, uint64_t gpu_ns, int first);
/* One GPU sample of a Coll/P2p of `bytes`: its span, also in its size class. */
void cp_profile_span(uint32_t path, uint64_t gpu_ns, int first, uint64_t bytes);

/* ---- hot path: the same with the caller's thread block, inlined ---- */
cp_prof_ent *cp_prof_ent_slow(cp_thr *t, uint32_t path);   /* allocates a chunk */
cp_gcls *cp_prof_cls_slow(cp_prof_ent *e);                 /* allocates e->cls */
static inline cp_prof_ent *cp_prof_ent_get(cp_thr *t, uint32_t path) {
  if (__builtin_expect(path < CP_PROF_CHUNK * CP_PROF_NCHUNK, 1)) {
    cp_prof_ent *c = t->prof[path / CP_PROF_CHUNK];
    if (__builtin_expect(c != NULL, 1)) return &c[path % CP_PROF_CHUNK];
  }
  return cp_prof_ent_slow(t, path);
}
/* Entry e's size-class table, made at its first use (NULL: no memory). */
static inline cp_gcls *cp_prof_cls(cp_prof_ent *e) { return e->cls ? e->cls : cp_prof_cls_slow(e); }
/* A Coll/P2p's bytes and its size class (0 bytes: counted at estimate time). */
static inline __attribute__((always_inline)) void cp_prof_bytes(cp_prof_ent *e, uint64_t bytes) {
  if (!bytes) return;
  cp_inc(&e->bytes, bytes);
  cp_gcls *g = cp_prof_cls(e);
  if (g) cp_inc(&g->c[cp_gcls_of(bytes)].calls, 1);
}
/* min starts at UINT64_MAX (cp_prof_ent_slow), so no first-call test.
 * wlg: log2 of the event's weight (host sampling, auto: host_sample.h),
 * 0 for weight 1; min and max stay the event's own. */
static inline __attribute__((always_inline)) void cp_profile_stop_t(cp_thr *t, uint32_t path, uint64_t dur,
                                                                    uint64_t self, uint64_t bytes,
                                                                    unsigned wlg) {
  cp_prof_ent *e = cp_prof_ent_get(t, path);
  if (!e) return;
  uint64_t calls = cp_ld(&e->calls);
  if (dur < cp_ld(&e->min)) __atomic_store_n(&e->min, dur, __ATOMIC_RELAXED);
  if (dur > cp_ld(&e->max)) __atomic_store_n(&e->max, dur, __ATOMIC_RELAXED);
  if (__builtin_expect(wlg != 0, 0)) {
    cp_inc(&e->wextra, (1ull << wlg) - 1);
    dur <<= wlg;
    self <<= wlg;
  }
  cp_inc(&e->total, dur);
  cp_inc(&e->self, self);
  cp_prof_bytes(e, bytes);
  __atomic_store_n(&e->calls, calls + 1, __ATOMIC_RELEASE);
}
/* A Coll/P2p of `bytes` whose proxy events carry its size class (seen,
 * gpu_estimate.h; lean_estimate.h). */
static inline void cp_profile_seen_t(cp_thr *t, uint32_t path, uint64_t bytes) {
  cp_prof_ent *e = cp_prof_ent_get(t, path);
  if (!e) return;
  cp_gcls *g = cp_prof_cls(e);
  if (g) cp_inc(&g->c[cp_gcls_of(bytes)].seen, 1);
}
/* A proxy event of a call whose Coll/P2p is of size class k: the path's
 * table counts it there (gpu_estimate.h, cp_gcls; lean_estimate.h). */
static inline void cp_profile_acls_t(cp_thr *t, uint32_t path, unsigned k) {
  cp_prof_ent *e = cp_prof_ent_get(t, path);
  if (!e || k >= CP_GCLS) return;
  cp_gcls *g = cp_prof_cls(e);
  if (g) cp_inc(&g->c[k].calls, 1);
}
/* One event counted without a time (host sampling, call_modes.h): its call,
 * bytes and size class, no duration, into entry e (_e) or path's (_t).
 * Returns 1 when this thread had no timed event on the path yet. */
static inline __attribute__((always_inline)) int cp_profile_count_e(cp_prof_ent *e, uint64_t bytes) {
  const uint64_t calls = cp_ld(&e->calls), untimed = cp_ld(&e->untimed);
  __atomic_store_n(&e->untimed, untimed + 1, __ATOMIC_RELAXED);
  cp_prof_bytes(e, bytes);
  __atomic_store_n(&e->calls, calls + 1, __ATOMIC_RELEASE);
  return calls == untimed;
}
/* ...the same from a counted memo entry (counted_memo.h): cls_calls its
 * size class's counter where bytes count (Coll/P2p), else NULL. */
static inline __attribute__((always_inline)) int cp_profile_count_m(cp_prof_ent *e, uint64_t bytes,
                                                                    uint64_t *cls_calls) {
  const uint64_t calls = cp_ld(&e->calls), untimed = cp_ld(&e->untimed);
  __atomic_store_n(&e->untimed, untimed + 1, __ATOMIC_RELAXED);
  if (cls_calls) {
    cp_inc(&e->bytes, bytes);
    cp_inc(cls_calls, 1);
  }
  __atomic_store_n(&e->calls, calls + 1, __ATOMIC_RELEASE);
  return calls == untimed;
}
static inline __attribute__((always_inline)) int cp_profile_count_t(cp_thr *t, uint32_t path, uint64_t bytes) {
  cp_prof_ent *e = cp_prof_ent_get(t, path);
  return e ? cp_profile_count_e(e, bytes) : 0;
}
static inline void cp_profile_state_t(cp_thr *t, uint32_t path) {
  cp_prof_ent *e = cp_prof_ent_get(t, path);
  if (e) cp_inc(&e->states, 1);
}
/* first: a first-call sample (collprof.h gpu_first_ns) */
static inline void cp_profile_gpu_t(cp_thr *t, uint32_t path, uint64_t gpu_ns, int first) {
  cp_prof_ent *e = cp_prof_ent_get(t, path);
  if (!e) return;
  cp_inc(&e->gpu_ns, gpu_ns);
  cp_inc(&e->gpu_samples, 1);
  if (first) {
    cp_inc(&e->gpu_first_ns, gpu_ns);
    cp_inc(&e->gpu_first_samples, 1);
  }
}

/* A timed kernel launch, or a run of launches, each with one Coll/P2p on
 * path (launch_timer.h): ns is the whole span. */
static inline void cp_profile_launch_t(cp_thr *t, uint32_t path, uint64_t ns, uint32_t launches) {
  cp_prof_ent *e = cp_prof_ent_get(t, path);
  if (!e) return;
  cp_inc(&e->launch_ns, ns);
  cp_inc(&e->launch_samples, launches);
}

/* Add every thread's numbers into out[0..n) (calls, total_ns, self_ns,
 * min_ns, max_ns, bytes, states, gpu_ns, gpu_samples, gpu_first_*, gpu_launch_*; min/max
 * combined).  cls: NULL, or n pointers; the size classes of a path that has
 * them are added into cls[path], allocated here (NULL if that fails). */
void cp_profile_merge(collprof_path_stat *out, size_t n, cp_gcls **cls);

/* Bytes of one element of an NCCL datatype name (interned id), 0 if unknown.
 * Memoized per id. */
uint32_t cp_datatype_size(uint32_t dtype_id);

#endif
