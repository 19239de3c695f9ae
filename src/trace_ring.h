/*
 * trace_ring.h — the producer side of the per-thread trace rings, inlined
 * into the callbacks (event_*.c); the consumer side, ring creation and the
 * writer thread are in trace_writer.c, which owns everything declared here.
 *
 * A ring is an array of 32-byte units with one producer (its thread) and
 * one consumer (the writer).  The common case of a put is: the thread's
 * ring from an initial-exec TLS pointer, one relaxed load of the accept
 * flag, the record written once, a release store of the head, and a write
 * prefetch of the line 16 lines ahead (cp_trace_commit says why).  No ring
 * yet, a wrap, or a ring that may be half full (by the producer's cached
 * view of the tail) go out of line to cp_trace_reserve_slow, which also
 * counts a record dropped by a full ring (and by one refilling after it
 * was full: trace_writer.c says why).
 */
#ifndef COLLPROF_TRACE_RING_H
#define COLLPROF_TRACE_RING_H
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include "trace.h"
#include "tls.h"
#include "hot.h"
#include "prefetch.h"

typedef struct cp_ring {
  /* written by the producer */
  _Atomic uint64_t head;          /* units published */
  uint64_t head_priv;             /* producer's own copy of head */
  uint64_t tail_cache;            /* producer's last view of tail */
  _Atomic uint64_t dropped;       /* single writer: the producer */
  /* read-only after creation */
  cp_unit *slots;
  uint64_t mask, half;            /* in units */
  struct cp_ring *next;
  /* producer, slow path only (cp_trace_reserve_slow): the ring overflowed
   * and has not drained to `resume` units since */
  uint64_t resume;
  int over;
  /* written by the consumer, on its own cache line */
  _Atomic uint64_t tail __attribute__((aligned(64)));
  _Atomic int state;
  int tid;
} cp_ring;

#define cp_tl_ring (cp_tls_hot.ring)   /* tls.h: this thread's ring, NULL until its first record */
#define cp_trace_accept (cp_hot.trace_accept)   /* hot.h: the trace takes records */

/* Room for n units (1, 2 or 4) at the head, or NULL (record dropped and
 * counted, or the trace takes no records). */
cp_unit *cp_trace_reserve_slow(unsigned n);

/* The common case of cp_trace_reserve only: NULL where the slow path
 * would have to decide (no call, so a caller can stay a leaf function and
 * save no registers; it then takes its own out-of-line way). */
static inline cp_unit *cp_trace_reserve_fast(unsigned n) {
  cp_ring *rg = cp_tl_ring;
  if (__builtin_expect(rg != NULL && atomic_load_explicit(&cp_trace_accept, memory_order_relaxed), 1)) {
    const uint64_t h = rg->head_priv;
    if (__builtin_expect(h + n - rg->tail_cache <= rg->half && (h & rg->mask) + n <= rg->mask + 1, 1))
      return &rg->slots[h & rg->mask];
  }
  return NULL;
}

static inline cp_unit *cp_trace_reserve(unsigned n) {
  cp_unit *u = cp_trace_reserve_fast(n);
  return __builtin_expect(u != NULL, 1) ? u : cp_trace_reserve_slow(n);
}

#ifndef CP_RING_AHEAD
#define CP_RING_AHEAD 32   /* units: 16 cache lines */
#endif

/* Publish the n units cp_trace_reserve returned. */
static inline void cp_trace_commit(unsigned n) {
  cp_ring *rg = cp_tl_ring;
  const uint64_t h = rg->head_priv + n;
  rg->head_priv = h;
  atomic_store_explicit(&rg->head, h, memory_order_release);
  /* Ask for the line a few records ahead now, for writing (prefetchw: a
   * plain prefetch would fetch it shared and the store would still wait).
   * The writer thread read it one lap ago on another core, and a store
   * that must first take the line back from there stalls this thread:
   * with the writer reading records this cost the bench's calling thread
   * half its time per event (share/doc/performance.md, "trace on"). */
  cp_prefetch_write(&rg->slots[(h + CP_RING_AHEAD) & rg->mask]);
  if (n > 2) cp_prefetch_write(&rg->slots[(h + CP_RING_AHEAD + 2) & rg->mask]);
}

/* A state record, one unit (a cp_srec, trace.h). */
static inline void cp_trace_put_state_i(const cp_srec *r) {
  cp_unit *u = cp_trace_reserve(1);
  if (!u) return;
  memcpy(u, r, sizeof *r);
  cp_trace_commit(1);
}

/* An event record copied from the one built in its slot at start, with
 * its stop time and thread filled in (kch: a KernelCh, gpu_stop its GPU
 * stop from state 22).  A full ring drops it and counts it. */
static inline void cp_trace_put_stopped_i(const cp_rec *r, uint64_t stop_ns, int32_t stop_tid, int kch,
                                          uint64_t gpu_stop) {
  cp_unit *u = cp_trace_reserve(4);
  if (!u) return;
  cp_rec *o = (cp_rec *)(void *)u;
  memcpy(o, r, sizeof *r);
  o->stop_ns = stop_ns;
  o->stop_tid = stop_tid;
  if (kch) o->d.kernel_ch.gpu_stop = gpu_stop;
  cp_trace_commit(4);
}

/* A compact event record (cp_erec) copied from its slot, stop filled in. */
static inline void cp_trace_put_stopped_c(const cp_erec *r, uint64_t stop_ns, int kch, uint64_t gpu_stop) {
  cp_unit *u = cp_trace_reserve(2);
  if (!u) return;
  cp_erec *o = (cp_erec *)(void *)u;
  memcpy(o, r, sizeof *r);
  o->stop_ns = stop_ns;
  if (kch) o->d.kernel_ch.gpu_stop = gpu_stop;
  cp_trace_commit(2);
}

#endif
