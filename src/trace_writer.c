/*
 * trace_writer.c — per-thread rings of cp_rec and the writer thread that
 * turns them into the JSONL trace (trace.h, trace_writer.h).
 *
 * Hot path: the thread's ring from an initial-exec TLS pointer, one
 * relaxed load of the accept flag, the record written once into the ring
 * and a release store of the head; wrap, attach and a ring that may be
 * half full go out of line (cp_trace_reserve_slow); that producer side is
 * inlined from trace_ring.h.  Rings are arrays of 32-byte
 * units: a full cp_rec takes 4 (cp_trace_put, cp_trace_put_stopped_i), a
 * compact event record 2 (cp_erec: most events; expanded in
 * trace_compact.c), a state record 1
 * (cp_srec, trace.h: states are half the records of a run and need only
 * the handle, time, thread and argument; the writer expands them).  A
 * record never wraps: the rest of the ring is skipped with a pad
 * unit.  The producer reads the consumer's tail only when its cached copy
 * says the ring may be half full; then it raises a wake flag for the
 * writer (a plain store: no system call on the hot path).  A full ring
 * drops the record and counts it; the writer thread prints one warning.
 * A ring that was full takes records again only once the writer has
 * drained it to three quarters (refill).  Why: taking a record as soon as
 * one fits makes the producer store into the slots the writer freed a
 * moment ago, lines the writer has just read on its own core, so each
 * store waits for its line to come back; a quarter of a ring behind the
 * writer they have long gone cold there, and the write prefetch
 * (trace_ring.h) fetches them in time.  Under sustained overload the
 * writer writes as many records either way (its ring never runs dry): in
 * collprof-bench ("collprof, trace on", T=1, 4 alternated runs each) the
 * calling thread's time per event went from 84-86 ns to 78-81, with 75.5%
 * of the records dropped against 73.3% (the run ended sooner).
 *
 * Rings hold COLLPROF_TRACE_BUFFER full records (4 units each), rounded
 * up to a power of two (index by mask).  They are created on a thread's first record (the only
 * allocation) and linked into a global
 * list that is only ever pushed to.  When a thread exits its ring is marked
 * dead; once drained it is free and the next new thread takes it over, so
 * memory stays bounded by the peak number of threads.
 *
 * The writer thread wakes every 2 ms, drains when a producer raised the
 * flag or 50 ms have passed, formats with trace_json.c into 64 KiB blocks
 * (close-time drains: 1 MiB) and write()s whole lines only, then calls
 * sched_yield() before the next block.  Why the yield: on Linux's EEVDF
 * scheduler (6.6 on) an application thread woken on the CPU where the
 * writer runs (a thread bound to that CPU, or placed there) often waited
 * a whole 4 ms tick for it, nice 10 or not, and with SCHED_IDLE too; on
 * the 2-core bench that cost two tracing threads a quarter of their
 * speed (collprof-bench "vs T=1" 1.47x; with the yield every 64 KiB
 * 1.98x, every 1 MiB 1.91x; COLLPROF_BENCH_SLICE_DETAIL=1 shows the run
 * delays).  A block is about 170 lines, tens of microseconds of
 * formatting, and the yield costs nothing where no thread waits for that
 * CPU.  The file itself (its lock, shared with a signal handler, failed
 * writes, the tail that stays last) is trace_file.c's.
 *
 * The writer runs at nice COLLPROF_TRACE_NICE (default 10; set by the
 * thread itself, for itself only).  It formats and writes about as many
 * bytes per record as the application spends nanoseconds making it, so on
 * cores the application keeps busy a writer at the application's priority
 * takes a third of them: 2 bench threads on 2 cores got 0.68 of a core
 * each and the writer 0.69 (test/bench/writer_share.sh, medians of 5
 * rounds); at nice 10 it gets what the application leaves, plus about a
 * tenth where they compete (0.97 each, the writer 0.10).  On idle cores it
 * runs as fast as before.  What it cannot write in time is dropped from a
 * full ring and counted, as before; the profile and the summary never
 * depend on it.  With one CPU per rank (mpirun's default for 2 ranks) it
 * leaves more of that CPU to the application and NCCL's proxy thread (on
 * 2 H200s the difference was within one run's noise: share/doc/performance.md).  At close,
 * the closing thread (at its own priority) takes over the drain from the
 * writer at the next block.
 *
 * fork: the child gets no trace.  Its copies of the rings belong to the
 * parent (the parent writes them), the writer thread does not exist there,
 * and its file descriptor is the parent's; so the child closes that
 * descriptor (trace_file.c), stops accepting records and never creates a
 * file or writes a tail (cp_trace_in_fork_child() tells the exit-time
 * code).  A child that exec()s loads collprof afresh and traces normally.
 */
#include "nccl_profiler_abi.h"
#include "trace.h"
#include "trace_ring.h"
#include "trace_writer.h"
#include "trace_json.h"
#include "trace_file.h"
#include "config.h"
#include "meta.h"
#include "output.h"   /* cp_local_atexit */
#include "handle.h"
#include "registry.h"
#include "oneoff.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)

_Static_assert(sizeof(cp_rec) <= 4 * sizeof(cp_unit), "cp_rec fits 4 ring units");
_Static_assert(sizeof(cp_srec) == sizeof(cp_unit), "cp_srec is 1 ring unit");

#define UNIT_PAD 0x7F   /* kind of a pad unit: skip to the ring's start */

enum { RING_ACTIVE = 0, RING_DEAD = 1, RING_FREE = 2 };

static atomic_int g_started, g_child, g_wake, g_stop;
static _Atomic(cp_ring *) g_rings;
static _Atomic uint64_t g_ring_bytes;
static uint64_t g_cap = 65536;
static pthread_mutex_t g_start_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t g_key;
static pthread_t g_thr;
static atomic_int g_thr_running;

static int g_drop_warned;
static char g_block[1 << 20];             /* format buffer: the writer's, and close-time drains' */
/* The writer thread's blocks: it writes and yields every 64 KiB (header). */
#define WRITER_BLOCK ((size_t)64 << 10)
_Static_assert(WRITER_BLOCK <= sizeof g_block, "the writer's block fits g_block");
static char g_sigbuf[1 << 16];            /* the signal-time flush's */

/* Drain every ring into the file (lock held).  buf/cap: format buffer;
 * sig: the signal-time flush; writer: the writer thread (which hands over
 * to a closing thread). */
static void drain_locked(char *buf, size_t cap, int sig, int writer) {
  int open_ok = 0;                  /* 0 not tried, 1 open, -1 no file */
  int tail_cut = 0;
  size_t len = 0;
  uint64_t nrec = 0;
  for (cp_ring *rg = atomic_load_explicit(&g_rings, memory_order_acquire); rg; rg = rg->next) {
    uint64_t t = atomic_load_explicit(&rg->tail, memory_order_relaxed);
    uint64_t h = atomic_load_explicit(&rg->head, memory_order_acquire);
    if (t != h && !open_ok) open_ok = cp_tfile_records_begin(sig, &tail_cut) ? 1 : -1;
    if (open_ok < 0 && t != h) {     /* no file: let the producers go on */
      cp_tfile_lost(h - t);
      t = h;
    }
    /* Read once per ring, not per record: the ring's first cache line also
     * holds the head that its producer stores at every record, and a read
     * of it per record (the formatting calls below make the compiler
     * reload) would pull that line away from the producer's core at every
     * record.  (tid stays per record: it lives on the writer's own line,
     * and a thread taking the ring over sets it before its first record.) */
    const cp_unit *const slots = rg->slots;
    const uint64_t mask = rg->mask;
    while (t != h) {
      if (cap - len < CP_TRACE_JSON_MAX) {
        /* Release the slots already formatted before the (slow) write. */
        atomic_store_explicit(&rg->tail, t, memory_order_release);
        cp_tfile_emit(buf, len, nrec, sig);
        len = 0;
        nrec = 0;
        /* A handler waits, or (writer thread) the closing thread does: hand over. */
        if (!sig && (cp_tfile_signal_waits() || (writer && atomic_load(&g_stop)))) {
          atomic_store_explicit(&rg->tail, t, memory_order_release);
          goto handed_over;
        }
        /* The writer thread gives its CPU back after every block (header:
         * why); a no-op where nothing else waits for that CPU. */
        if (writer) sched_yield();
      }
      const cp_unit *u = &slots[t & mask];
      uint8_t kind = *(const uint8_t *)u;
      if (kind == UNIT_PAD) {
        t += mask + 1 - (t & mask);
        continue;
      }
      if (kind == CP_REC_STATE_C) {
        cp_rec r;
        cp_srec_expand((const cp_srec *)u, &r);
        len += cp_trace_json(&r, buf + len);
        t += 1;
      } else if (kind == CP_REC_EVENT_C) {
        cp_rec r;
        cp_erec_expand((const cp_erec *)u, rg->tid, &r);
        len += cp_trace_json(&r, buf + len);
        t += 2;
      } else {
        len += cp_trace_json((const cp_rec *)u, buf + len);
        t += 4;
      }
      nrec++;
    }
    atomic_store_explicit(&rg->tail, t, memory_order_release);
    if (atomic_load_explicit(&rg->state, memory_order_acquire) == RING_DEAD &&
        atomic_load_explicit(&rg->head, memory_order_acquire) == t) {
      int d = RING_DEAD;
      atomic_compare_exchange_strong(&rg->state, &d, RING_FREE);
    }
  }
  if (len) cp_tfile_emit(buf, len, nrec, sig);
handed_over:
  cp_tfile_records_end(tail_cut);
}

static void warn_drops(void) {
  if (g_drop_warned) return;
  uint64_t d = 0;
  for (cp_ring *rg = atomic_load_explicit(&g_rings, memory_order_acquire); rg; rg = rg->next)
    d += atomic_load_explicit(&rg->dropped, memory_order_relaxed);
  if (!d) return;
  g_drop_warned = 1;
  cp_warn("trace buffer full (COLLPROF_TRACE_BUFFER=%llu records per thread): trace records "
          "dropped, counted in traceDropped",
          (unsigned long long)g_cap);
}

static uint64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *writer_main(void *arg) {
  (void)arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);   /* handlers run on app threads */
  /* Lower only (header: why): a process already nicer keeps its value. */
  const int nice = cp_config_get()->trace_nice, me = cp_tfile_raw_tid();
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, (id_t)me);
  if (errno == 0 && nice > now && setpriority(PRIO_PROCESS, (id_t)me, nice) != 0)
    cp_warn("cannot lower the trace writer's priority (COLLPROF_TRACE_NICE=%d): %s; it runs at the "
            "application's", nice, strerror(errno));
  uint64_t last = mono_ms();
  while (!atomic_load(&g_stop)) {
    cp_tfile_nap(2000000);
    uint64_t now = mono_ms();
    if (!atomic_exchange(&g_wake, 0) && now - last < 50) continue;
    last = now;
    do {
      cp_tfile_lock();
      drain_locked(g_block, WRITER_BLOCK, 0, 1);
      warn_drops();
      cp_tfile_unlock();
    } while (atomic_exchange(&g_wake, 0) && !atomic_load(&g_stop));
  }
  return NULL;
}

static _Atomic int g_pid;   /* the process's, at trace start */

int cp_trace_pid(void) { return atomic_load_explicit(&g_pid, memory_order_relaxed); }
int cp_trace_started(void) { return atomic_load_explicit(&g_started, memory_order_acquire); }

/* ---- rings ---- */

static void ring_dtor(void *p) {
  cp_ring *rg = p;
  if (cp_tl_ring == rg) cp_tl_ring = NULL;
  atomic_store_explicit(&rg->state, RING_DEAD, memory_order_release);
}

static void after_fork_child(void) {
  atomic_store(&g_child, 1);
  atomic_store(&cp_trace_accept, 0);
  cp_tl_ring = NULL;
  cp_tfile_after_fork();
  atomic_store(&g_thr_running, 0);
}

/* A ring's slots in bytes: mask + 1 units, rounded up to the 64 that
 * aligned_alloc wants sizes to be multiples of. */
static size_t ring_slots_bytes(void) { return (g_cap * 4 * sizeof(cp_unit) + 63) & ~(size_t)63; }

/* A new ring in `state`, linked into the list (NULL: out of memory). */
static cp_ring *ring_new(int state) {
  const size_t slots_bytes = ring_slots_bytes();
  cp_ring *rg = aligned_alloc(64, (sizeof *rg + 63) & ~(size_t)63);
  cp_unit *slots = aligned_alloc(64, slots_bytes);
  if (!rg || !slots) {
    free(rg);
    free(slots);
    return NULL;
  }
  memset(rg, 0, sizeof *rg);
  /* Touch every page now, once per ring: otherwise the first pass
   * through the ring takes a page fault every 128 records on the
   * application's thread. */
  memset(slots, 0, slots_bytes);
  rg->slots = slots;
  rg->mask = g_cap * 4 - 1;
  rg->half = g_cap * 2;
  rg->resume = g_cap * 3;
  atomic_store(&rg->state, state);
  atomic_fetch_add(&g_ring_bytes, sizeof *rg + slots_bytes);
  rg->next = atomic_load(&g_rings);
  while (!atomic_compare_exchange_weak(&g_rings, &rg->next, rg)) {}
  return rg;
}

/* A ring, free or new, not yet bound to any thread (NULL: none). */
static cp_ring *ring_get(void) {
  if (!atomic_load(&g_started)) cp_trace_start();
  if (!atomic_load(&cp_trace_accept)) return NULL;
  cp_ring *rg;
  for (rg = atomic_load_explicit(&g_rings, memory_order_acquire); rg; rg = rg->next) {
    int f = RING_FREE;
    if (atomic_compare_exchange_strong(&rg->state, &f, RING_ACTIVE)) goto got;
  }
  rg = ring_new(RING_ACTIVE);
  if (!rg) return NULL;
got:
  rg->head_priv = atomic_load(&rg->head);
  rg->tail_cache = atomic_load(&rg->tail);
  rg->over = 0;
  return rg;
}

/* Free rings kept ahead: at most SPARE_MAX, and no more than SPARE_BYTES
 * of them (COLLPROF_TRACE_BUFFER sets a ring's size), but 2 always. */
#define SPARE_MAX 16
#define SPARE_BYTES (32u << 20)
void cp_trace_prepare(unsigned threads) {
  if (!atomic_load(&g_started) || !atomic_load(&cp_trace_accept) || atomic_load(&g_child)) return;
  uint64_t most = SPARE_BYTES / ring_slots_bytes();   /* never 0: g_cap >= 1 */
  most = most < 2 ? 2 : most > SPARE_MAX ? SPARE_MAX : most;
  const uint64_t o = cp_oneoff_begin();   /* oneoff.h: collprof's set-up, if on NCCL's time */
  pthread_mutex_lock(&g_start_mu);   /* one init at a time counts and adds */
  unsigned spare = 0, used = 0;
  for (cp_ring *rg = atomic_load_explicit(&g_rings, memory_order_acquire); rg; rg = rg->next) {
    const int st = atomic_load_explicit(&rg->state, memory_order_acquire);
    spare += st == RING_FREE;
    used += st == RING_ACTIVE;
  }
  for (; spare < most && spare + used < threads; spare++)
    if (!ring_new(RING_FREE)) break;
  pthread_mutex_unlock(&g_start_mu);
  cp_oneoff_end(o);
}

__attribute__((noinline, cold)) static cp_ring *ring_attach(void) {
  const uint64_t o = cp_oneoff_begin();   /* oneoff.h: a thread's ring, once */
  cp_ring *rg = ring_get();
  if (rg) {
    rg->tid = cp_tfile_tid();
    cp_tl_ring = rg;
    pthread_setspecific(g_key, rg);
  }
  cp_oneoff_end(o);
  return rg;
}

cp_ring *cp_trace_ring_for(int tid) {
  cp_ring *rg = ring_get();
  if (rg) rg->tid = tid;   /* ACTIVE, bound to no thread: never marked dead */
  return rg;
}

void cp_trace_ring_release(cp_ring *rg) {
  if (rg) ring_dtor(rg);
}

cp_ring *cp_trace_ring_use(cp_ring *rg) {
  cp_ring *prev = cp_tl_ring;
  cp_tl_ring = rg;
  return prev;
}

/* Room for n units at the head (n = 1, 2 or 4), a pad written first when a
 * record of 2 or 4 units would wrap.  NULL (and the record counted as dropped) when
 * the ring is full or the trace takes no records.  The slow path: no ring
 * yet, a wrap, or the cached tail says the ring may be half full. */
cp_unit *cp_trace_reserve_slow(unsigned n) {
  if (!atomic_load_explicit(&cp_trace_accept, memory_order_relaxed)) return NULL;
  cp_ring *rg = cp_tl_ring;
  if (!rg && !(rg = ring_attach())) return NULL;
  uint64_t h = rg->head_priv;
  uint64_t pad = n > 1 && (h & rg->mask) + n > rg->mask + 1 ? rg->mask + 1 - (h & rg->mask) : 0;
  if (h + pad + n - rg->tail_cache > rg->half) {
    rg->tail_cache = atomic_load_explicit(&rg->tail, memory_order_acquire);
    uint64_t fill = h + pad + n - rg->tail_cache;
    /* full, or refilling after it was (header: refill) */
    if (fill > rg->mask + 1 || (rg->over && fill > rg->resume)) {
      rg->over = 1;
      atomic_store_explicit(&rg->dropped,
                            atomic_load_explicit(&rg->dropped, memory_order_relaxed) + 1,
                            memory_order_relaxed);
      if (!atomic_load_explicit(&g_wake, memory_order_relaxed))
        atomic_store_explicit(&g_wake, 1, memory_order_relaxed);
      return NULL;
    }
    rg->over = 0;
    if (fill > rg->half && !atomic_load_explicit(&g_wake, memory_order_relaxed))
      atomic_store_explicit(&g_wake, 1, memory_order_relaxed);   /* write the shared line once */
  }
  if (pad) {
    *(uint8_t *)&rg->slots[h & rg->mask] = UNIT_PAD;
    h += pad;
    rg->head_priv = h;
  }
  return &rg->slots[h & rg->mask];
}

void cp_trace_put(const cp_rec *r) {
  cp_unit *u = cp_trace_reserve(4);
  if (!u) return;
  memcpy(u, r, sizeof *r);
  cp_trace_commit(4);
}

/* ---- life cycle ---- */

void cp_trace_start(void) {
  if (atomic_load_explicit(&g_started, memory_order_acquire)) return;
  if (atomic_load(&g_child)) return;
  const uint64_t o = cp_oneoff_begin();   /* oneoff.h */
  pthread_mutex_lock(&g_start_mu);
  if (!atomic_load(&g_started)) {
    const cp_config *c = cp_config_get();
    uint64_t cap = 1;
    while (cap < c->trace_buffer) cap <<= 1;
    g_cap = cap;
    pthread_key_create(&g_key, ring_dtor);
    pthread_atfork(NULL, NULL, after_fork_child);
    cp_meta_init();
    atomic_store(&g_pid, (int)getpid());
    cp_tfile_name_from_output();
    atexit(cp_local_atexit);
    if (c->trace_on) {
      atomic_store(&cp_trace_accept, 1);
      if (pthread_create(&g_thr, NULL, writer_main, NULL) == 0) {
        pthread_setname_np(g_thr, "collprof-trace");
        atomic_store(&g_thr_running, 1);
      } else {
        cp_warn("cannot start the trace writer thread; records are written only at flush");
      }
    }
    atomic_store_explicit(&g_started, 1, memory_order_release);
  }
  pthread_mutex_unlock(&g_start_mu);
  cp_oneoff_end(o);
}

void cp_trace_flush(void) {
  if (!atomic_load(&g_started) || atomic_load(&g_child)) return;
  cp_tfile_lock();
  drain_locked(g_block, sizeof g_block, 0, 0);
  warn_drops();
  cp_tfile_unlock();
}

uint64_t cp_trace_dropped(void) {
  uint64_t d = cp_tfile_lost_count();
  for (cp_ring *rg = atomic_load_explicit(&g_rings, memory_order_acquire); rg; rg = rg->next)
    d += atomic_load_explicit(&rg->dropped, memory_order_relaxed);
  return d;
}

uint64_t cp_trace_memory_bytes(void) { return atomic_load(&g_ring_bytes); }
int cp_trace_in_fork_child(void) { return atomic_load(&g_child); }

long cp_trace_append_lines(const char *text, size_t len) {
  if (!text || atomic_load(&g_child)) return -1;
  cp_trace_start();
  cp_tfile_lock();
  drain_locked(g_block, sizeof g_block, 0, 0);
  long at = cp_tfile_append(text, len);
  cp_tfile_unlock();
  return at;
}

long cp_trace_set_tail(const char *text, size_t len) {
  if (!text || atomic_load(&g_child)) return -1;
  cp_trace_start();
  char *copy = malloc(len ? len : 1);
  if (!copy) return -1;
  memcpy(copy, text, len);
  cp_tfile_lock();
  drain_locked(g_block, sizeof g_block, 0, 0);
  long at = cp_tfile_set_tail(copy, len);   /* takes the copy */
  cp_tfile_unlock();
  return at;
}

void cp_trace_close(void) {
  if (!atomic_load(&g_started) || atomic_load(&g_child)) return;
  if (atomic_exchange(&g_thr_running, 0) && !pthread_equal(pthread_self(), g_thr)) {
    atomic_store(&g_stop, 1);
    pthread_join(g_thr, NULL);
  }
  atomic_store(&cp_trace_accept, 0);
  cp_tfile_lock();
  drain_locked(g_block, sizeof g_block, 0, 0);
  warn_drops();
  cp_tfile_close();
  cp_tfile_unlock();
}

/* The handler drains the rings and then keeps the file lock (trace_file.c:
 * the process is about to die, and a write started after it would be cut
 * short by the kill). */
void cp_trace_flush_signal_safe(void) {
  if (!atomic_load(&g_started) || atomic_load(&g_child)) return;
  if (!cp_tfile_signal_take()) return;
  drain_locked(g_sigbuf, sizeof g_sigbuf, 1, 0);
  cp_tfile_signal_keep();
}

#pragma GCC visibility pop
