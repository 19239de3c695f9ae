/*
 * pool.h — an event pool and its blacklist.
 *
 * Every event lives in a slot of a pool of its communicator: one pool per
 * communicator and calling thread (a "lane": registry.h says why), PXN
 * events in the process-wide detach pool (comm index 0).  Slots come in chunks of
 * COLLPROF_POOL_SIZE (default 1024), given up only when the communicator is
 * finalized (cp_pool_release_chunks), into a cache the next pool that grows
 * takes from: a job that creates and destroys communicators in a loop stays
 * bounded, and slot memory is never unmapped (cp_pool_peek_live).  Allocation is round robin, starting after the slot handed
 * out last, so a just-released slot is reused as late as possible.  When
 * every slot is in use or blacklisted the pool grows by a chunk; when growth
 * fails (memory, or the 24-bit slot space) the event gets a plain malloc'ed
 * slot, flagged so that stop frees it instead of returning it, and listed in
 * a small fallback set (indices CP_POOL_FB_BASE..) so a later stop finds it
 * by index and validates it by generation, never by dereferencing a value
 * NCCL handed back.
 *
 * Each hand-out bumps the slot's 32-bit generation; handles carry its low 8
 * bits (handle.h), children record the whole of it, so reuse is detected.
 *
 * Why the blacklist stays, although handles carry the path: the path of a
 * child no longer depends on the parent's slot, but its numbers still do.
 * While a parent is named by a live child (or held for KernelCh children
 * still to come: cp_pool_hold) its slot is kept from reuse, so
 * children that stop after the parent (61% of KernelCh, 78% of ProxyOp
 * start after their Coll stopped) still add their GPU span (KernelCh: the
 * Coll's latest stop - earliest start) and self time to the right record
 * instead of losing it to, or corrupting, a recycled slot.  Parents are
 * reference-counted (count in the slot: O(1)).  A live parent only counts
 * its children: a live slot is never handed out, so it needs no list.  A
 * parent that stops while still named, or one named after it stopped,
 * enters an intrusive list in LRU order (a stop or a naming moves it to
 * the tail), bounded by COLLPROF_BLACKLIST_CAP; over the cap the least
 * recently named stopped parent is evicted (one warning, counted), which
 * only means its late children's GPU span and child time may be dropped.
 * Only a KernelCh names a parent that already stopped (parent_link.h,
 * link_parent): its self time is settled, so a ProxyOp starting after its
 * Coll stopped has nothing to give it and takes no reference.
 *
 * Holding a pool (pool_owner.h): its owner, the thread that records in
 * it, holds it without a lock; another thread posts what it changes in a
 * parent here (a KernelCh or ProxyOp of the proxy thread under the
 * application thread's Coll) or, rarely (snapshot, finalize), takes it
 * with exclusive access; pools without an owner (PXN detach pool, a lane
 * shared by more than CP_LANES threads) are locked for all.  Every
 * function below except create/lock/unlock/peek_live expects the pool
 * held.  Pools of different communicators share nothing.
 */
#ifndef COLLPROF_POOL_H
#define COLLPROF_POOL_H
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "handle.h"
#include "trace.h"
#include "prefetch.h"

#if defined(__x86_64__) || defined(__i386__)
#define cp_cpu_relax() __builtin_ia32_pause()
#else
#define cp_cpu_relax() ((void)0)
#endif

#define CP_SLOT_NIL 0xFFFFFFFFu
#define CP_POOL_FB_MAX 256u
/* slot index of fallback 0; indices fit the handle's CP_LOCAL_BITS */
#define CP_POOL_FB_BASE ((1u << CP_LOCAL_BITS) - CP_POOL_FB_MAX)

typedef struct cp_slot {
  /* first cache line: what every start, stop and state touches */
  /* bytes 0-7 in this order: cp_slot_key reads them as one word */
  uint32_t gen;          /* bumped at each hand-out (cp_slot_next_gen: its low
                            8 bits are never 0); 0 = never handed out */
  uint16_t path;
  uint8_t live;          /* started, not yet stopped */
  uint8_t fallback;      /* plain allocation: freed at stop */
  uint8_t has_gpu_stop;  /* KernelCh: state 22 seen */
  uint8_t parent_linked; /* parent_* name a slot (generation checked) */
  uint8_t took_ref;      /* holds one reference on that parent */
  uint8_t is_pxn;
  uint16_t type;         /* NCCL type bit (all fit 16 bits) */
  uint16_t span_n;       /* Coll/P2p: KernelCh in the span not yet accounted
                            (saturates); on this line: the allocator tests it */
  uint32_t refcnt;       /* live children naming this slot (blacklist) */
  uint32_t parent_comm, parent_slot, parent_gen;
  int32_t start_tid;
  uint32_t hold;         /* Coll/P2p: references kept for KernelCh not yet started */
  uint64_t start_ns;
  uint64_t child_ns;     /* children that started and stopped inside */
  uint64_t bytes;
  /* second line: parents (blacklist, GPU span), KernelCh, PXN */
  uint32_t lru_prev, lru_next;
  int32_t origin_pid;    /* PXN: the issuing process */
  uint64_t gpu_start, gpu_stop;   /* KernelCh: pTimer at start / state 22 */
  uint64_t span_min, span_max;    /* Coll/P2p: GPU span of KernelCh children */
  uint64_t kc_seq;       /* Coll/P2p of a KernelCh-on call: p->kc_ops after its start */
  uint32_t kc_epoch;     /* Coll/P2p: epoch of its KernelCh expectation (mask_control.h);
                            KernelCh: that of the hold it took; 0 = none */
  uint8_t span_bad;      /* Coll/P2p: a KernelCh span may come from a reused NCCL
                            timestamp slot: the GPU sample is dropped */
  uint8_t span_first;    /* Coll/P2p: of a first-call sample (mask_control.h) */
  uint8_t acls;          /* Coll/P2p and proxy events (ProxyOp, ProxyStep, NetPlugin):
                            1 + the size class of the call's Coll/P2p (gpu_estimate.h),
                            0 unknown; set at start (atomic: a ProxyOp reads its
                            Coll's on another thread without the pool), other types
                            leave it stale (lean_estimate.h) */
  uint8_t kc_n;          /* Coll/P2p of a KernelCh-on call whose KernelCh come from
                            another thread (kc_remote): its channels, for the proxy
                            thread's span (parent_link.c, kc_span); 0 otherwise */
  union {                /* trace record, built at start when the trace is on */
    cp_rec rec;          /* full form (Coll, PXN) */
    cp_erec erec;        /* compact form (the rest): rec.kind tells which */
  };
  char pad2[256 - 128 - sizeof(cp_rec)];
} cp_slot;
_Static_assert(sizeof(cp_slot) == 256, "a slot is 4 cache lines (chunks are line-aligned)");

_Static_assert(offsetof(cp_slot, path) == 4 && offsetof(cp_slot, live) == 6, "cp_slot_key layout");

/* What a handle says about its slot, as one word: generation's low 8 bits
 * (bits 0-7), path (32-47), live (48).  A slot matches a handle when its
 * cp_slot_key equals cp_handle_key: one load and one compare on every stop
 * and state instead of four tests (a never-used slot has generation 0,
 * which no handle carries).  CP_KEY_LIVE masked off: the same slot,
 * stopped or not (a parent). */
#define CP_KEY_LIVE (1ull << 48)
static inline uint64_t cp_slot_key(const cp_slot *s) {
  uint64_t w;
  memcpy(&w, s, sizeof w);
  return w & 0x0001FFFF000000FFull;
}
static inline uint64_t cp_handle_key(uint64_t h) {
  return (h & 0xFFu) | ((h >> 12) & 0x0000FFFF00000000ull) | CP_KEY_LIVE;
}
/* The next generation of a slot handed out again: low 8 bits never 0. */
static inline void cp_slot_next_gen(cp_slot *s) {
  uint32_t g = s->gen + 1;
  if ((g & 0xFFu) == 0) g++;
  __atomic_store_n(&s->gen, g, __ATOMIC_RELAXED);
}
/* Writers of the key bytes (under the pool lock) store them atomically:
 * cp_pool_peek_live reads them without the lock. */
static inline void cp_slot_set_live(cp_slot *s, uint8_t v) { __atomic_store_n(&s->live, v, __ATOMIC_RELAXED); }
static inline void cp_slot_set_path(cp_slot *s, uint32_t path) {
  __atomic_store_n(&s->path, (uint16_t)path, __ATOMIC_RELAXED);
}

/* Lines by who writes them, and how many a callback touches.  In a real
 * job NCCL's own work between two callbacks pushes the profiler's lines
 * out of L1, so every line a callback touches is a cache miss of its own
 * (test/bench/lines_per_event.sh): the owner's per-event fields share one
 * line, what it reads at every event another, and nothing else is touched
 * on the common path.  A read by another core takes a line out of the
 * owner's cache in the modified state, and the owner's next store to it
 * waits for the line back; so what other threads read (a proxy thread at
 * each KernelCh start and stop: the owner word, slots0/cap0; posters: the
 * inbox's indices) stays off the line the owner writes.
 *   line 0  written by the owner at every event (inside, the allocator,
 *           the blacklist, events, the KernelCh-on count); other threads
 *           only for exclusive access
 *   line 1  the posters' lock and the published inbox head
 *   line 2  read at every event by the owner and by other threads,
 *           written rarely (and in_tail by posters)
 *   then    the rest; kc_ops on a line of its own */
typedef struct cp_pool {
  /* line 0 */
  atomic_uint lock;      /* 0 free, 1 held: cp_pool_lock (locked mode, exclusive access) */
  atomic_uint ctl;       /* CP_CTL_WANT | CP_CTL_SHARED (pool_owner.h) */
  atomic_uint inside;    /* the owner is inside a callback here */
  uint32_t in_seen;      /* in_head as the holder last drained: the check at
                            every event reads this line, not line 1; relaxed
                            atomic loads and stores only (read before entry) */
  uint32_t capacity;     /* nchunks * chunk_size */
  uint32_t next;         /* round robin cursor */
  uint32_t busy;         /* slots live or blacklisted */
  uint32_t bl_head, bl_tail;   /* blacklist (LRU order) */
  uint32_t pad0;
  uint64_t bl_size;
  uint64_t kc_ops_own;   /* KernelCh-on Coll/P2p started: published to kc_ops in batches */
  uint64_t events;
  /* line 1: posters among themselves (pool_owner.c) */
  _Alignas(64) atomic_uint in_lock;
  uint32_t in_head;      /* next post to apply (written by the pool's holder) */
  /* line 2: read by every event and by other threads, written rarely */
  _Alignas(64) _Atomic uintptr_t owner;   /* the cp_thr recording here; 0: locked mode */
  uint64_t hkey;         /* cp_pool_hkey(comm_index, lane) */
  cp_slot *slots0;       /* chunks[0] */
  uint32_t cap0;         /* slots in chunks[0] while it exists, else 0: most
                            pools never grow, so cp_pool_slot is one compare */
  int finalized;         /* its communicator was finalized (relaxed atomic) */
  atomic_uint in_tail;   /* next free inbox entry (release: the entry is written) */
  int chunk_shift;       /* log2(chunk_size) when a power of two, else -1 */
  uint32_t chunk_size;
  int scratch;           /* self-cost pool: records nothing */
  int released;          /* chunks freed at finalize: no slot is found any more */
  uint32_t comm_index;
  uint32_t lane;         /* which of the communicator's pools (registry.h) */
  /* the rest */
  uint64_t bl_cap;       /* blacklist entries kept (read when one is listed) */
  struct cp_post *inbox; /* CP_INBOX entries, made at the first post, freed at finalize */
  cp_slot **chunks;
  uint32_t nchunks, chunks_cap, max_chunks;
  cp_slot **retired;     /* the chunk arrays after release (kept: cp_pool_peek_slot) */
  uint32_t retired_cap;
  uint64_t evictions;
  /* fallback set: CP_POOL_FB_MAX entries, allocated on first use */
  cp_slot **fb;
  uint32_t fb_gen;
  uint64_t fallbacks, exhausted;
  /* per communicator: GPU %globaltimer minus host clock, min over KernelCh */
  int64_t gpu_off;
  int gpu_off_valid;
  uint64_t memory;
  /* events still live when the chunks were released: per path */
  struct cp_unterm { uint32_t path, n; } *unterm;
  uint32_t nunterm;
  /* a line of its own: read at every KernelCh stop on the proxy thread,
   * written at one KernelCh-on Coll/P2p start in CP_KC_OPS_BATCH */
  _Alignas(64) uint64_t kc_ops;   /* kc_ops_own as last published (slot-reuse check;
                                     relaxed atomic: KernelCh stops on other threads read it) */
  int kc_remote;         /* a KernelCh of another thread has named a parent here (set once) */
} cp_pool;
/* kc_ops is published once in this many KernelCh-on Coll/P2p starts (a
 * power of two).  A store to a line another core has read waits for the
 * line to come back: with the proxy thread reading kc_ops at each of its
 * KernelCh stops, the store at every start cost the application thread's
 * recorded Coll start 60-70 ns on an H200 host (session 60, the
 * phase-timing build's "slot" part: 116-165 ns, 67-90 publishing one in
 * 8).  The readers allow for the lag (parent_link.h, kc_untrusted). */
#define CP_KC_OPS_BATCH 8u
_Static_assert((CP_KC_OPS_BATCH & (CP_KC_OPS_BATCH - 1)) == 0, "CP_KC_OPS_BATCH: a power of two (start_gpu_fields masks by it)");
_Static_assert(offsetof(cp_pool, in_lock) == 64 && offsetof(cp_pool, owner) == 128 &&
               offsetof(cp_pool, lane) < 192, "cp_pool: lines 0-2 as laid out above");

/* A pool with chunks of chunk_size slots (0 -> 1024) and a blacklist of
 * blacklist_cap (0 -> 1).  NULL when out of memory. */
cp_pool *cp_pool_create(uint32_t comm_index, uint32_t chunk_size, uint64_t blacklist_cap);
/* The same, as lane `lane` of its communicator (cp_pool_create: lane 0). */
cp_pool *cp_pool_create_lane(uint32_t comm_index, uint32_t lane, uint32_t chunk_size, uint64_t blacklist_cap);

/* The pool lock.  Held for a few dozen instructions, so a waiter spins,
 * reading the lock without writing it (the holder's cache line is not
 * pulled away from it at every try).  But the holder can be preempted:
 * NCCL's proxy thread holding the application thread's pool to link a
 * KernelCh, on a rank bound to one core (Open MPI's default for 2 ranks or
 * fewer), cannot run again until the spinner's time slice ends -- a
 * millisecond-scale stall of the application.  So after CP_LOCK_SPINS
 * spins (several microseconds, far beyond any critical section) the waiter
 * yields the CPU: a system call only in that case, never in the
 * uncontended one.  cp_pool_lock_yields counts those yields (all pools).
 * cp_spin_lock is the same lock for other short sections (registry.h's
 * lanes_lock). */
#define CP_LOCK_SPINS 1024
extern _Atomic uint64_t cp_pool_lock_yields;
void cp_pool_lock_contended(atomic_uint *lock);
static inline void cp_spin_lock(atomic_uint *lock) {
  if (__builtin_expect(atomic_exchange_explicit(lock, 1u, memory_order_acquire) == 0, 1)) return;
  cp_pool_lock_contended(lock);
}
static inline void cp_spin_unlock(atomic_uint *lock) { atomic_store_explicit(lock, 0u, memory_order_release); }
static inline void cp_pool_lock(cp_pool *p) { cp_spin_lock(&p->lock); }
static inline void cp_pool_unlock(cp_pool *p) { cp_spin_unlock(&p->lock); }
/* The pool to oneself whatever its mode: the lock, and for a pool with an
 * owner the wait until the owner is out (pool_owner.h).  Snapshot,
 * finalize and other threads' rare calls. */
void cp_pool_excl_lock(cp_pool *p);
void cp_pool_excl_unlock(cp_pool *p);
#define CP_INBOX 512u

/* Hand out a slot: *idx gets its index, the slot is live with a new
 * generation and zeroed event fields.  NULL when even the fallback set is
 * full (counted in p->exhausted) or the pool was released.  A reused
 * slot's pending GPU span is first accounted to its old path. */
cp_slot *cp_pool_alloc_slow(cp_pool *p, uint32_t *idx);
/* Its first chunk made now (a pool no thread can reach yet: registry.c),
 * not at the first event's start (oneoff.h: 0.1-0.2 ms on the CPU). */
void cp_pool_prepare(cp_pool *p);
/* Slot by index (chunk or fallback set), NULL if none. */
cp_slot *cp_pool_slot_slow(cp_pool *p, uint32_t idx);
/* The event stopped: the slot goes back (stays held while blacklisted);
 * a fallback slot is freed. */
void cp_pool_release_slow(cp_pool *p, cp_slot *s, uint32_t idx);
/* A parent that stops while children still name it (or holds remain)
 * enters the blacklist at its LRU tail (lock held, called by release). */
void cp_pool_list_stopped(cp_pool *p, cp_slot *s, uint32_t idx);
static inline void cp_pool_release(cp_pool *p, cp_slot *s, uint32_t idx) {
  if (__builtin_expect(!s->fallback, 1)) {
    cp_slot_set_live(s, 0);
    if (s->refcnt == 0) p->busy--;
    else cp_pool_list_stopped(p, s, idx);   /* still named: blacklisted now */
    return;
  }
  cp_pool_release_slow(p, s, idx);
}
/* A child names this slot / stopped naming it.  Only stopped parents are
 * listed: a live slot is never handed out anyway, so while the parent runs
 * (ProxyOp under its ProxySteps, GroupApi under its CollApi) a child only
 * counts; the list work is for parents that stopped first.  Inlined: a
 * live parent, a further child of the most recently named stopped parent,
 * and a child that is not the last. */
void cp_pool_ref_slow(cp_pool *p, cp_slot *s, uint32_t idx);
void cp_pool_unref_slow(cp_pool *p, cp_slot *s, uint32_t idx);
static inline void cp_pool_ref(cp_pool *p, cp_slot *s, uint32_t idx) {
  if (s->live || (s->refcnt != 0 && p->bl_tail == idx)) { s->refcnt++; return; }
  cp_pool_ref_slow(p, s, idx);
}
static inline void cp_pool_unref(cp_pool *p, cp_slot *s, uint32_t idx) {
  if (s->refcnt > 1 || (s->refcnt == 1 && s->live)) { s->refcnt--; return; }
  cp_pool_unref_slow(p, s, idx);
}
/* n > 1 references at once (a batch of KernelCh: kc_batch.h). */
void cp_pool_unref_n(cp_pool *p, cp_slot *s, uint32_t idx, uint32_t n);
/* Holds for late KernelCh children.  With the host far ahead of the GPU a
 * Coll/P2p's KernelCh children start (proxy thread) long after it stopped;
 * a parent kept only by live children would be recycled in between and its
 * GPU span lost.  So a Coll/P2p of a sampled call (KernelCh on) holds n =
 * nChannels references from its own start: cp_pool_hold.  Each KernelCh
 * that starts while holds remain takes one of them over as its ordinary
 * child reference (cp_pool_hold_take: O(1), no list work), dropped at its
 * stop as usual; when the count reaches 0 the slot is free and its span is
 * accounted lazily (reuse, snapshot, finalize).  (Once a pool has seen a
 * KernelCh from another thread its Coll/P2p take no holds: parent_link.c,
 * kc_span.)  Children beyond n take
 * ordinary references.  A hold that is never taken (fewer KernelCh than
 * nChannels) ends with eviction (LRU, counted, one warning: bounds memory)
 * or at finalize (cp_pool_release_chunks accounts the span).  Fallback
 * slots are freed at stop and are never held; callers keep the scratch and
 * PXN detach pools free of holds. */
void cp_pool_hold(cp_pool *p, cp_slot *s, uint32_t idx, uint32_t n);
/* One hold off s->hold: 1 when there was one.  A compare-and-swap: a
 * KernelCh on another thread takes holds without the pool (pool_owner.h,
 * cp_pool_peek_parent). */
static inline int cp_slot_take_hold(cp_slot *s) {
  uint32_t h = __atomic_load_n(&s->hold, __ATOMIC_RELAXED);
  while (h != 0)
    if (__atomic_compare_exchange_n(&s->hold, &h, h - 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return 1;
  return 0;
}
static inline int cp_pool_hold_take(cp_slot *s) {
  return s->refcnt != 0 && cp_slot_take_hold(s);   /* refcnt already counts it */
}
/* Account a slot's pending GPU span into its path (profile) and clear it;
 * a span marked bad is counted as dropped instead. */
void cp_pool_flush_span(cp_slot *s);

static inline cp_slot *cp_pool_chunk_slot(const cp_pool *p, uint32_t idx) {
  uint32_t c, i;
  if (__builtin_expect(p->chunk_shift >= 0, 1)) { c = idx >> p->chunk_shift; i = idx & (p->chunk_size - 1); }
  else { c = idx / p->chunk_size; i = idx % p->chunk_size; }
  return &p->chunks[c][i];
}

/* Without the pool lock: whether the slot a handle names is live with the
 * handle's generation and path (hkey = cp_handle_key).  1 yes, 0 no, -1
 * cannot tell here (slot outside the first chunk, or the pool released its
 * chunks): take the lock.  For the one callback that reads a slot and
 * changes nothing (a state other than KernelCh's GPU stop).  Safe against
 * a concurrent finalize: released chunks are kept for reuse, never
 * unmapped (pool.c, chunk cache), so a racing read sees slot memory. */
static inline int cp_pool_peek_live(const cp_pool *p, uint32_t idx, uint64_t hkey) {
  const cp_slot *s0 = __atomic_load_n(&p->slots0, __ATOMIC_ACQUIRE);
  const uint32_t cap = __atomic_load_n(&p->cap0, __ATOMIC_RELAXED);
  if (__builtin_expect(s0 == NULL || idx >= cap, 0)) return -1;
  const uint64_t w = __atomic_load_n((const uint64_t *)(const void *)&s0[idx], __ATOMIC_RELAXED);
  return (w & 0x0001FFFF000000FFull) == hkey;
}

static inline cp_slot *cp_pool_slot(cp_pool *p, uint32_t idx) {
  if (__builtin_expect(idx < p->cap0, 1)) return &p->slots0[idx];
  return cp_pool_slot_slow(p, idx);
}

/* The slot's first line only: in a real job each line a start touches is
 * a cache miss (pool header comment), and most events never use the
 * second.  Its fields are set by those that do, at their start: a
 * Coll/P2p's kc_seq, kc_epoch, span_first and span_bad (start_slot.h,
 * start_gpu_fields), a KernelCh's gpu_start and kc_epoch, a PXN event's
 * origin_pid (read only where is_pxn says it was set).  span_n, on the
 * first line, is 0 at hand-out (cp_pool_alloc) and span_min/max are set
 * with its first span. */
static inline void cp_pool_reset_slot(cp_slot *s) {
  cp_slot_set_live(s, 1);
  s->has_gpu_stop = s->parent_linked = s->took_ref = s->is_pxn = 0;
  s->child_ns = s->bytes = 0;
  /* read by KernelCh on other threads without the pool (cp_pool_peek_parent) */
  __atomic_store_n(&s->hold, 0, __ATOMIC_RELAXED);
}

/* The slot after i in the first chunk, the one the next hand-out takes if
 * it is free, asked for now, all four lines (a Coll's start writes them
 * all: its trace record is the second half).  Round-robin hands out a
 * slot untouched for a lap of the pool, which on an NCCL host the next
 * start found gone: the slot part of a recorded Coll start took 86-101 ns
 * on an H200 host (the phase-timing build, src/phase_timing.h). */
static inline void cp_pool_prefetch_next(const cp_pool *p, uint32_t i) {
  if (__builtin_expect(i < p->cap0, 1)) {
    const char *n = (const char *)&p->slots0[i];
    cp_prefetch_write(n);
    cp_prefetch_write(n + 64);
    cp_prefetch_write(n + 128);
    cp_prefetch_write(n + 192);
  }
}

/* The usual case inlined: the slot at the round-robin cursor is free. */
static inline cp_slot *cp_pool_alloc(cp_pool *p, uint32_t *idx) {
  uint32_t i = p->next;
  if (__builtin_expect(i < p->capacity && p->busy < p->capacity, 1)) {
    cp_slot *s = i < p->cap0 ? &p->slots0[i] : cp_pool_chunk_slot(p, i);
    if (__builtin_expect(!s->live && s->refcnt == 0 && s->span_n == 0, 1)) {
      cp_slot_next_gen(s);
      cp_pool_reset_slot(s);
      p->busy++;
      p->next = i + 1;
      *idx = i;
      cp_pool_prefetch_next(p, i + 1);
      return s;
    }
  }
  return cp_pool_alloc_slow(p, idx);
}

/* At finalize (lock held): account pending GPU spans, tally live events as
 * unterminated (p->unterm), free every chunk and fallback slot.  The pool
 * struct stays (handles name its index); afterwards no slot is found, so
 * late stops and states are bad calls and children elsewhere skip their
 * parent update. */
void cp_pool_release_chunks(cp_pool *p);

/* Visit every slot (snapshot); pool lock held by the caller. */
void cp_pool_foreach(cp_pool *p, void (*fn)(const cp_slot *s, void *arg), void *arg);

/* Free a pool and everything in it.  Only for pools no handle can reach
 * any more (tests); a communicator's pool header lives to process end (its
 * slots go at finalize: cp_pool_release_chunks). */
void cp_pool_destroy(cp_pool *p);

/* Bytes of released chunks kept for reuse (pool.c, chunk cache). */
uint64_t cp_pool_cache_bytes(void);

/* Tests only: cap the number of chunks so that growth fails. */
void cp_pool_set_max_chunks(cp_pool *p, uint32_t n);

#endif
