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

/* One stopped event: duration, self time (duration minus children that
 * started and stopped inside it), bytes (Coll/P2p). */
void cp_profile_stop(uint32_t path, uint64_t dur_ns, uint64_t self_ns, uint64_t bytes);
/* One state record of an event on this path. */
void cp_profile_state(uint32_t path);
/* One GPU sample: a KernelCh duration, or a Coll/P2p span. */
void cp_profile_gpu(uint32_t path, uint64_t gpu_ns);

/* Add every thread's numbers into out[0..n) (calls, total_ns, self_ns,
 * min_ns, max_ns, bytes, states, gpu_ns, gpu_samples; min/max combined). */
void cp_profile_merge(collprof_path_stat *out, size_t n);

/* Bytes of one element of an NCCL datatype name (interned id), 0 if unknown.
 * Memoized per id. */
uint32_t cp_datatype_size(uint32_t dtype_id);

#endif
