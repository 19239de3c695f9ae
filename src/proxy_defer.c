/*
 * proxy_defer.c — records NCCL's proxy-thread callbacks and applies them
 * to the core later, on the applier thread (proxy_defer.h says why).
 *
 * One ring per recording thread (single producer: the thread; consumer:
 * whoever holds g_apply_mu, the applier or a recording thread whose ring is
 * full, or a flush).  The producer side touches only its own ring and id
 * tables; the consumer side owns the map from deferred ids to core handles
 * and the trace ring that carries the recording thread's id.  Records are
 * applied in the order they were made, ring by ring, so a stop is applied
 * after its start and a child after its parent of the same thread.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#pragma GCC visibility push(hidden)
#include "proxy_defer.h"
#include "clock.h"
#include "config.h"
#include "handle.h"
#include "hot.h"
#include "plugin.h"
#include "pool.h"
#include "oneoff.h"
#include "tls.h"
#include "trace_ring.h"
#include "trace_writer.h"

enum { DFR_START = 1, DFR_STOP = 2, DFR_STATE = 3 };
/* Records applied per lock hold: by the applier per ring (APPLY_BATCH),
 * by a recording thread whose ring is full (FULL_BATCH: its stall stays
 * around 10 us instead of a whole ring's 1 ms). */
enum { APPLY_BATCH = 512, FULL_BATCH = 64 };
enum { DQ_ACTIVE = 0, DQ_DEAD = 1, DQ_FREE = 2 };

/* One callback, one cache line. */
typedef struct cp_dfr {
  uint8_t cb, v4, type_bit, has_args;
  int32_t si;                 /* state: eState; start: the descriptor's rank */
  uint64_t now;               /* host time of the callback (cp_clock_now) */
  uint64_t h;                 /* the deferred handle (start: the one handed out) */
  uint64_t ctx, parent;       /* start: context and parentObj as NCCL passed them */
  union {
    struct { int32_t pid, peer, nsteps, chunk, is_send; uint8_t channel; } op;
    int32_t step;
    struct { uint64_t ptimer; uint8_t channel; } kc;
    struct { int64_t id; uint64_t data; } net;
    ncclProfilerEventStateArgs_v5_t arg;
  } u;
} cp_dfr;
_Static_assert(sizeof(cp_dfr) == 64, "a record is one cache line");
_Static_assert(sizeof(ncclProfilerEventStateArgs_v5_t) == 8, "state arguments are one word");

typedef struct cp_dq {
  _Alignas(64) _Atomic uint64_t head;   /* records made (producer) */
  _Alignas(64) _Atomic uint64_t tail;   /* records applied (consumer) */
  _Alignas(64) uint64_t head_priv, tail_cache;   /* producer only */
  uint32_t id_head, id_tail;            /* producer: FIFO of free ids */
  uint32_t index;                       /* ring number in handles */
  int tid;                              /* the recording thread */
  _Atomic int state;
  uint16_t *gen;                        /* producer: generation of each id's occupant */
  uint8_t *live;                        /* producer: id started and not stopped */
  struct cp_pool **kc_parent;           /* producer: a KernelCh id's parent pool (NULL: none) */
  uint32_t *free_ids;
  uint64_t *real;                       /* consumer: the core's handle of each id */
  uint16_t *real_gen;                   /* consumer: the generation real[] belongs to */
  struct cp_ring *trace_ring;           /* consumer: carries trace_tid (NULL: none yet) */
  int trace_tid;
  cp_dfr *recs;
} cp_dq;

static cp_dq *_Atomic g_dq[CP_DQ_MAX];
static atomic_uint g_ndq;
static pthread_mutex_t g_apply_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_attach_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t g_key;
static _Atomic uint64_t g_applied, g_full, g_stale, g_no_ring;
#define t_dq (cp_tls_hot.dq)             /* tls.h: the hot thread-local line */
#define t_no_ring (cp_tls_hot.dq_none)

static void dq_dtor(void *p) {
  cp_dq *q = p;
  if (q) atomic_store_explicit(&q->state, DQ_DEAD, memory_order_release);
}

static void after_fork_child(void) {
  /* The applier did not come along, nor did the recording threads; a
   * lock one of them held at the fork would never be let go. */
  cp_defer_on = 0;
  const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  memcpy(&g_apply_mu, &fresh, sizeof fresh);
  memcpy(&g_attach_mu, &fresh, sizeof fresh);
}

static void dq_free(cp_dq *q) {
  if (!q) return;
  free(q->gen); free(q->live); free(q->kc_parent); free(q->free_ids); free(q->real); free(q->real_gen); free(q->recs);
  free(q);
}

/* A ring for the calling thread: a dead thread's once applied, else a new
 * one.  Once per thread (an allocation, outside the event path proper). */
static cp_dq *dq_attach_untimed(void);
__attribute__((cold, noinline)) static cp_dq *dq_attach(void) {
  const uint64_t o = cp_oneoff_begin();   /* oneoff.h: a thread's ring, once */
  cp_dq *q = dq_attach_untimed();
  cp_oneoff_end(o);
  return q;
}
static cp_dq *dq_attach_untimed(void) {
  if (t_no_ring) return NULL;
  pthread_mutex_lock(&g_attach_mu);
  cp_dq *q = NULL;
  const uint32_t n = atomic_load(&g_ndq);
  for (uint32_t i = 0; i < n && !q; i++) {
    cp_dq *c = atomic_load(&g_dq[i]);
    int f = DQ_FREE;
    if (c && atomic_compare_exchange_strong(&c->state, &f, DQ_ACTIVE)) q = c;
  }
  if (!q && n < CP_DQ_MAX) {
    q = aligned_alloc(64, (sizeof *q + 63) & ~(size_t)63);
    if (q) {
      memset(q, 0, sizeof *q);
      q->gen = calloc(CP_DQ_IDS, sizeof *q->gen);
      q->live = calloc(CP_DQ_IDS, 1);
      q->kc_parent = calloc(CP_DQ_IDS, sizeof *q->kc_parent);
      q->free_ids = calloc(CP_DQ_IDS, sizeof *q->free_ids);
      q->real = calloc(CP_DQ_IDS, sizeof *q->real);
      q->real_gen = calloc(CP_DQ_IDS, sizeof *q->real_gen);
      q->recs = aligned_alloc(64, CP_DQ_RECS * sizeof *q->recs);
      if (!q->gen || !q->live || !q->kc_parent || !q->free_ids || !q->real || !q->real_gen || !q->recs) {
        dq_free(q);
        q = NULL;
      } else {
        memset(q->recs, 0, CP_DQ_RECS * sizeof *q->recs);   /* touched once, here */
        q->index = n;
        atomic_store(&g_dq[n], q);
        atomic_store(&g_ndq, n + 1);
      }
    }
  }
  if (q) {
    /* ids 1 .. CP_DQ_IDS-1 free (0 is never handed out) */
    q->id_head = 0;
    q->id_tail = 0;
    for (uint32_t id = 1; id < CP_DQ_IDS; id++) {
      q->free_ids[q->id_tail++ & (CP_DQ_IDS - 1)] = id;
      q->live[id] = 0;
    }
    q->tid = (int)syscall(SYS_gettid);
    q->head_priv = atomic_load(&q->head);
    q->tail_cache = atomic_load(&q->tail);
    pthread_setspecific(g_key, q);
  }
  pthread_mutex_unlock(&g_attach_mu);
  if (!q) {
    t_no_ring = 1;
    if (atomic_fetch_add(&g_no_ring, 1) == 0)
      cp_warn("cannot record NCCL proxy-thread callbacks for later (COLLPROF_PROXY_DEFER: no memory, or "
              "more than %d threads); that thread's callbacks are handled inline", CP_DQ_MAX);
  }
  t_dq = q;
  return q;
}

/* ---- consumer side (g_apply_mu held) ---- */

static inline cp_dq *ring_of(uint64_t h) {
  const uint32_t i = (uint32_t)(h >> 48) & 0xFFFu;
  return i < atomic_load_explicit(&g_ndq, memory_order_acquire) ? atomic_load(&g_dq[i]) : NULL;
}

/* The core's handle for deferred handle h; 0 with *stale set when it is
 * no longer known (its id was handed out again). */
static uint64_t resolve(uint64_t h, int *stale) {
  *stale = 0;
  cp_dq *q = ring_of(h);
  const uint32_t id = (uint32_t)h, g = (uint32_t)(h >> 32) & 0xFFFFu;
  if (!q || id == 0 || id >= CP_DQ_IDS || q->real_gen[id] != g) {
    *stale = 1;
    return 0;
  }
  return q->real[id];
}

static void stale_line(const char *cb) {
  if (atomic_fetch_add(&g_stale, 1) == 0)
    cp_warn("%s on a deferred proxy-thread handle that is no longer known (its id was handed "
            "out again, %d or more starts of its thread later, or it never was); ignored "
            "(COLLPROF_PROXY_DEFER)", cb, CP_DQ_IDS - 1);
}

static void apply_one(cp_dq *q, const cp_dfr *r) {
  cp_replay_ns = r->now ? r->now : 1;
  int stale;
  if (r->cb == DFR_START) {
    ncclProfilerEventDescr_v5_t d;
    memset(&d, 0, sizeof d);
    d.type = 1ull << r->type_bit;
    d.rank = r->si;
    uint64_t parent = r->parent;
    if ((parent >> 60) == CP_DQ_TAG) parent = resolve(parent, &stale);   /* 0 when gone: no parent link */
    d.parentObj = (void *)(uintptr_t)parent;
    switch (d.type) {
    case ncclProfileProxyOp:
      d.proxyOp.pid = r->u.op.pid; d.proxyOp.peer = r->u.op.peer; d.proxyOp.nSteps = r->u.op.nsteps;
      d.proxyOp.chunkSize = r->u.op.chunk; d.proxyOp.isSend = r->u.op.is_send;
      d.proxyOp.channelId = r->u.op.channel;
      break;
    case ncclProfileProxyStep: d.proxyStep.step = r->u.step; break;
    case ncclProfileKernelCh: d.kernelCh.pTimer = r->u.kc.ptimer; d.kernelCh.channelId = r->u.kc.channel; break;
    case ncclProfileNetPlugin: d.netPlugin.id = r->u.net.id; d.netPlugin.data = (void *)(uintptr_t)r->u.net.data; break;
    default: break;
    }
    void *eh = NULL;
    cp_core_start((void *)(uintptr_t)r->ctx, &eh, &d, r->v4);
    const uint32_t id = (uint32_t)r->h;
    q->real[id] = (uint64_t)(uintptr_t)eh;
    q->real_gen[id] = (uint16_t)(r->h >> 32);
    return;
  }
  const uint64_t h = resolve(r->h, &stale);
  if (stale) { stale_line(r->cb == DFR_STOP ? "stopEvent" : "recordEventState"); return; }
  if (!h) return;   /* its start handed NCCL nothing inline: the core said why then */
  if (r->cb == DFR_STOP) {
    cp_replay_kc_ops = r->u.kc.ptimer;   /* a KernelCh's: 1 + the parent pool's count then (0: none) */
    cp_core_stop((void *)(uintptr_t)h);
    cp_replay_kc_ops = 0;
  } else cp_core_state((void *)(uintptr_t)h, r->si, r->has_args ? &r->u.arg : NULL);
}

/* Apply up to max of what ring q holds now (max 0: all); returns the
 * records applied. */
static uint64_t apply_ring(cp_dq *q, uint64_t max) {
  uint64_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&q->head, memory_order_acquire);
  if (tail == head) return 0;
  if (max && head - tail > max) head = tail + max;
  cp_thr *t = cp_thr_get();
  const int my_tid = t->tid;
  /* q->tid is the recording thread's (written before its first record,
   * read after the head that publishes it).  A ring taken over from a
   * dead thread gives that thread's trace ring back: its records must keep
   * the old id. */
  if (q->trace_ring && q->trace_tid != q->tid) {
    cp_trace_ring_release(q->trace_ring);
    q->trace_ring = NULL;
  }
  if (!q->trace_ring && atomic_load_explicit(&cp_hot.trace_on, memory_order_relaxed)) {
    q->trace_ring = cp_trace_ring_for(q->tid);
    q->trace_tid = q->tid;
  }
  struct cp_ring *prev = q->trace_ring ? cp_trace_ring_use(q->trace_ring) : NULL;
  t->tid = q->tid;
  const uint64_t n = head - tail;
  for (; tail != head; tail++) apply_one(q, &q->recs[tail & (CP_DQ_RECS - 1)]);
  atomic_store_explicit(&q->tail, tail, memory_order_release);
  cp_replay_ns = 0;
  t->tid = my_tid;
  if (q->trace_ring) cp_trace_ring_use(prev);
  atomic_fetch_add_explicit(&g_applied, n, memory_order_relaxed);
  return n;
}

static uint64_t apply_all_locked(uint64_t max) {
  uint64_t n = 0;
  const uint32_t nq = atomic_load_explicit(&g_ndq, memory_order_acquire);
  for (uint32_t i = 0; i < nq; i++) {
    cp_dq *q = atomic_load(&g_dq[i]);
    if (!q) continue;
    n += apply_ring(q, max);
    /* a dead thread's ring, applied: free for the next thread */
    int d = DQ_DEAD;
    if (atomic_load(&q->state) == DQ_DEAD &&
        atomic_load(&q->tail) == atomic_load_explicit(&q->head, memory_order_acquire))
      atomic_compare_exchange_strong(&q->state, &d, DQ_FREE);
  }
  return n;
}

void cp_defer_flush(void) {
  if (!atomic_load_explicit(&g_ndq, memory_order_acquire)) return;
  pthread_mutex_lock(&g_apply_mu);
  apply_all_locked(0);
  pthread_mutex_unlock(&g_apply_mu);
}

static int g_applier_held;   /* cp_defer_hold_applier; read and written under g_apply_mu */

/* The applier: every ring, then a nap that grows while there is nothing
 * to do (20 us after work, up to 1 ms idle).  A ring fills in about 1 ms
 * at the fastest pace seen (24 KernelCh per 10 us call on 2 H200). */
static void *applier_main(void *arg) {
  (void)arg;
  long nap = 50000;
  for (;;) {
    /* batches of at most APPLY_BATCH per ring, the lock let go between
     * them: a recording thread with a full ring waits one batch at most */
    uint64_t n = 0, got;
    do {
      pthread_mutex_lock(&g_apply_mu);
      got = g_applier_held ? 0 : apply_all_locked(APPLY_BATCH);
      pthread_mutex_unlock(&g_apply_mu);
      n += got;
    } while (got);
    nap = n ? 20000 : (nap < 1000000 ? nap * 2 : 1000000);
    struct timespec ts = {0, nap};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

/* Test hook (test/unit/test_proxy_defer.c): the applier's pace is a race
 * with the recording thread, so a full ring cannot be had for certain
 * without it.  Under the lock: once this returns the applier has finished
 * its batch and takes no more until let go.  Flushes and full rings still
 * apply; the callbacks never read the flag. */
void cp_defer_hold_applier(int hold) {
  pthread_mutex_lock(&g_apply_mu);
  g_applier_held = hold;
  pthread_mutex_unlock(&g_apply_mu);
}

void cp_defer_setup(void) {
  const cp_config *c = cp_config_get();
  if (!c->proxy_defer || c->capture) return;
  pthread_key_create(&g_key, dq_dtor);
  pthread_atfork(NULL, NULL, after_fork_child);
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  pthread_t th;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);   /* the application's signals are not ours */
  const int rc = pthread_create(&th, &at, applier_main, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  pthread_attr_destroy(&at);
  if (rc != 0) {
    cp_warn("cannot start the thread that applies NCCL proxy-thread callbacks; they are handled inline");
    return;
  }
  cp_defer_on = 1;
}

/* ---- producer side (the recording thread) ---- */

/* The next record of q, applying the ring first when it is full. */
static inline cp_dfr *rec_next(cp_dq *q) {
  if (__builtin_expect(q->head_priv - q->tail_cache >= CP_DQ_RECS, 0)) {
    q->tail_cache = atomic_load_explicit(&q->tail, memory_order_acquire);
    if (q->head_priv - q->tail_cache >= CP_DQ_RECS) {
      pthread_mutex_lock(&g_apply_mu);
      apply_ring(q, FULL_BATCH);
      pthread_mutex_unlock(&g_apply_mu);
      atomic_fetch_add_explicit(&g_full, 1, memory_order_relaxed);
      q->tail_cache = atomic_load_explicit(&q->tail, memory_order_acquire);
    }
  }
  return &q->recs[q->head_priv & (CP_DQ_RECS - 1)];
}
static inline void rec_commit(cp_dq *q) {
  q->head_priv++;
  atomic_store_explicit(&q->head, q->head_priv, memory_order_release);
}

/* A stop or state on a deferred handle from a thread other than the one
 * that started it (NCCL does not do that; handled, not fast): everything
 * recorded so far first, then the call itself, inline. */
__attribute__((cold, noinline)) static ncclResult_t other_thread(int cb, uint64_t h, int st,
                                                                 const ncclProfilerEventStateArgs_v5_t *a) {
  /* With no ring at all (deferral off: the usual case) a value with the
   * deferred tag is not a handle collprof made: the core says so, in the
   * words it uses for any such value, not as a stale deferred handle. */
  if (atomic_load_explicit(&g_ndq, memory_order_acquire) == 0)
    return cb == DFR_STOP ? cp_core_stop((void *)(uintptr_t)h) : cp_core_state((void *)(uintptr_t)h, st, a);
  pthread_mutex_lock(&g_apply_mu);
  apply_all_locked(0);
  int stale;
  const uint64_t real = resolve(h, &stale);
  pthread_mutex_unlock(&g_apply_mu);
  if (stale) { stale_line(cb == DFR_STOP ? "stopEvent" : "recordEventState"); return NCCL_OK; }
  if (!real) return NCCL_OK;
  return cb == DFR_STOP ? cp_core_stop((void *)(uintptr_t)real) : cp_core_state((void *)(uintptr_t)real, st, a);
}

ncclResult_t cp_defer_start(void *context, void **eHandle, const ncclProfilerEventDescr_v5_t *d, int v4) {
  cp_dq *q = t_dq;
  if (__builtin_expect(!q, 0)) q = dq_attach();
  if (__builtin_expect(!q || !eHandle, 0)) return cp_core_start(context, eHandle, d, v4);
  if (__builtin_expect(q->id_head == q->id_tail, 0)) {
    /* every id in use: what was recorded first, then this one inline */
    pthread_mutex_lock(&g_apply_mu);
    apply_ring(q, 0);
    pthread_mutex_unlock(&g_apply_mu);
    return cp_core_start(context, eHandle, d, v4);
  }
  const uint32_t id = q->free_ids[q->id_head++ & (CP_DQ_IDS - 1)];
  uint16_t g = (uint16_t)(q->gen[id] + 1);
  if (!g) g = 1;
  q->gen[id] = g;
  q->live[id] = 1;
  /* A KernelCh's stop trusts its GPU span only if few KernelCh-on calls
   * started on its parent's pool meanwhile (parent_link.h, CP_KC_SLOT_TRUST):
   * counted at the stop as NCCL makes it, not when it is applied. */
  struct cp_pool *kp = NULL;
  if (d->type == ncclProfileKernelCh && d->parentObj) {
    cp_handle_fields pf;
    if (cp_handle_decode((uint64_t)(uintptr_t)d->parentObj, &pf)) kp = cp_core_pool_for(pf.comm, cp_slot_lane(pf.slot));
  }
  q->kc_parent[id] = kp;
  const uint64_t h = (CP_DQ_TAG << 60) | ((uint64_t)q->index << 48) | ((uint64_t)g << 32) | id;
  cp_dfr *r = rec_next(q);
  r->cb = DFR_START;
  r->v4 = (uint8_t)v4;
  r->type_bit = (uint8_t)__builtin_ctzll(d->type);
  r->has_args = 0;
  r->si = d->rank;
  r->now = cp_clock_now();
  r->h = h;
  r->ctx = (uint64_t)(uintptr_t)context;
  r->parent = (uint64_t)(uintptr_t)d->parentObj;
  switch (d->type) {
  case ncclProfileKernelCh: r->u.kc.ptimer = d->kernelCh.pTimer; r->u.kc.channel = d->kernelCh.channelId; break;
  case ncclProfileProxyOp:
    r->u.op.pid = d->proxyOp.pid; r->u.op.peer = d->proxyOp.peer; r->u.op.nsteps = d->proxyOp.nSteps;
    r->u.op.chunk = d->proxyOp.chunkSize; r->u.op.is_send = d->proxyOp.isSend;
    r->u.op.channel = d->proxyOp.channelId;
    break;
  case ncclProfileProxyStep: r->u.step = d->proxyStep.step; break;
  case ncclProfileNetPlugin: r->u.net.id = d->netPlugin.id; r->u.net.data = (uint64_t)(uintptr_t)d->netPlugin.data; break;
  default: break;
  }
  rec_commit(q);
  *eHandle = (void *)(uintptr_t)h;
  return NCCL_OK;
}

ncclResult_t cp_defer_stop(void *eHandle) {
  const uint64_t h = (uint64_t)(uintptr_t)eHandle;
  cp_dq *q = t_dq;
  if (__builtin_expect(!q || ((h >> 48) & 0xFFFu) != q->index, 0)) return other_thread(DFR_STOP, h, 0, NULL);
  const uint32_t id = (uint32_t)h;
  uint64_t kc_ops = 0;
  if (id && id < CP_DQ_IDS && q->live[id] && q->gen[id] == (uint16_t)(h >> 32)) {
    q->live[id] = 0;
    q->free_ids[q->id_tail++ & (CP_DQ_IDS - 1)] = id;
    if (q->kc_parent[id]) kc_ops = 1 + __atomic_load_n(&q->kc_parent[id]->kc_ops, __ATOMIC_RELAXED);
  }
  cp_dfr *r = rec_next(q);
  r->cb = DFR_STOP;
  r->u.kc.ptimer = kc_ops;
  r->now = cp_clock_now();
  r->h = h;
  rec_commit(q);
  return NCCL_OK;
}

ncclResult_t cp_defer_state(void *eHandle, int eState, const ncclProfilerEventStateArgs_v5_t *a) {
  const uint64_t h = (uint64_t)(uintptr_t)eHandle;
  cp_dq *q = t_dq;
  if (__builtin_expect(!q || ((h >> 48) & 0xFFFu) != q->index, 0)) return other_thread(DFR_STATE, h, eState, a);
  cp_dfr *r = rec_next(q);
  r->cb = DFR_STATE;
  r->si = eState;
  r->has_args = a != NULL;
  if (a) r->u.arg = *a;
  r->now = cp_clock_now();
  r->h = h;
  rec_commit(q);
  return NCCL_OK;
}

void cp_defer_get_counts(cp_defer_counts *o) {
  memset(o, 0, sizeof *o);
  const uint32_t nq = atomic_load_explicit(&g_ndq, memory_order_acquire);
  for (uint32_t i = 0; i < nq; i++) {
    cp_dq *q = atomic_load(&g_dq[i]);
    if (q) o->recorded += atomic_load_explicit(&q->head, memory_order_relaxed);
  }
  o->applied = atomic_load(&g_applied);
  o->full = atomic_load(&g_full);
  o->stale = atomic_load(&g_stale);
}
