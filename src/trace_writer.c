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
 * CPU.  A failed or short write is cut back with ftruncate, the records
 * counted as lost (full disk: one warning, keep going).  All file work happens under the "io lock": a mutex for
 * ordinary threads plus an atomic owner word (the kernel tid) that the
 * signal-time flush takes with compare-and-swap only: it skips when it
 * interrupted the holder itself, and otherwise waits at most ~200 ms for
 * another thread's write to end (a SIGTERM usually leaves seconds).
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
 * Unwritable folder: one warning, the trace is off (records are no longer
 * accepted); the in-memory profile and snapshots are unaffected.
 *
 * fork: the child gets no trace.  Its copies of the rings belong to the
 * parent (the parent writes them), the writer thread does not exist there,
 * and its file descriptor is the parent's; so the child closes that
 * descriptor, stops accepting records and never creates a file or writes
 * a tail (cp_trace_in_fork_child() tells the exit-time code).  A child that
 * exec()s loads collprof afresh and traces normally.
 */
#include "nccl_profiler_abi.h"
#include "trace.h"
#include "trace_ring.h"
#include "trace_writer.h"
#include "trace_json.h"
#include "config.h"
#include "meta.h"
#include "output.h"
#include "handle.h"
#include "registry.h"
#include "oneoff.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)

_Static_assert(sizeof(cp_rec) <= 4 * sizeof(cp_unit), "cp_rec fits 4 ring units");
_Static_assert(sizeof(cp_srec) == sizeof(cp_unit), "cp_srec is 1 ring unit");

#define UNIT_PAD 0x7F   /* kind of a pad unit: skip to the ring's start */

enum { RING_ACTIVE = 0, RING_DEAD = 1, RING_FREE = 2 };


static __thread int tl_tid __attribute__((tls_model("initial-exec")));

static atomic_int g_started, g_child, g_wake, g_stop;
static _Atomic(cp_ring *) g_rings;
static _Atomic uint64_t g_ring_bytes, g_lines, g_lost;
static uint64_t g_cap = 65536;
static pthread_mutex_t g_start_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_key_t g_key;
static pthread_t g_thr;
static atomic_int g_thr_running;

/* ---- io lock and the file (all below guarded by it) ---- */
static pthread_mutex_t g_io_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_io_owner;             /* tid holding the file, 0 = free */
static int g_fd = -1;
static char g_path[4096];
static int g_opened_once, g_failed_flag;
static atomic_int g_failed;               /* readable without the lock */
static uint64_t g_off;                    /* our write position = file size */
static long g_tail_off = -1;
static char *g_tail;
static size_t g_tail_len;
static int g_disk_warned, g_drop_warned;
static char g_block[1 << 20];             /* format buffer: the writer's, and close-time drains' */
/* The writer thread's blocks: it writes and yields every 64 KiB (header). */
#define WRITER_BLOCK ((size_t)64 << 10)
_Static_assert(WRITER_BLOCK <= sizeof g_block, "the writer's block fits g_block");
static char g_sigbuf[1 << 16];            /* the signal-time flush's */

static int raw_tid(void) { return (int)syscall(SYS_gettid); }

static int my_tid(void) {
  if (!tl_tid) tl_tid = raw_tid();
  return tl_tid;
}

static void nap(long ns) {
  struct timespec ts = {0, ns};
  nanosleep(&ts, NULL);
}

/* Set while a signal-time flush keeps the file (cp_trace_flush_signal_safe). */
static atomic_int g_sig_hold;
/* Set while a signal handler waits for the file: the writer stops after its
 * current block and nobody else takes the lock, so the handler gets it well
 * within Open MPI's 1 s between SIGTERM and SIGKILL. */
static atomic_int g_sig_wants;

static void io_lock(void) {
  pthread_mutex_lock(&g_io_mu);
  int me = my_tid();
  /* Only a signal-time flush can hold it here.  It keeps the file so that
   * the kill that follows cannot cut a write short; if the process is
   * still alive after 2 s (or the handler ran on this very thread, which
   * is now going on), the signal did not end it and the file is taken
   * back. */
  for (int waited_ms = 0;; waited_ms++) {
    int z = 0;
    if (atomic_load(&g_sig_wants) && waited_ms < 2000) { nap(1000000); continue; }
    if (atomic_compare_exchange_strong(&g_io_owner, &z, me)) return;
    if (atomic_load(&g_sig_hold) && (z == me || waited_ms >= 2000) &&
        atomic_compare_exchange_strong(&g_io_owner, &z, me)) {
      atomic_store(&g_sig_hold, 0);
      atomic_store(&g_sig_wants, 0);
      return;
    }
    nap(1000000);
  }
}

static void io_unlock(void) {
  atomic_store(&g_io_owner, 0);
  pthread_mutex_unlock(&g_io_mu);
}

/* write() all of it; 0 or -1 (errno). */
static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (w == 0) { errno = ENOSPC; return -1; }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Cut the file back to `off` after a failed write, so it holds whole lines. */
static void cut_to(uint64_t off) {
  if (ftruncate(g_fd, (off_t)off) != 0) { /* nothing more we can do */ }
  lseek(g_fd, (off_t)off, SEEK_SET);
}

static void set_failed(int sig, const char *what, int err) {
  g_failed_flag = 1;
  atomic_store(&g_failed, 1);
  atomic_store(&cp_trace_accept, 0);
  if (!sig)
    cp_warn("cannot %s trace file %s: %s; trace off (the profile is kept)", what, g_path,
            strerror(err));
}

/* Open the file if needed (lock held).  Async-signal-safe when sig. */
static int ensure_open(int sig) {
  if (g_fd >= 0) return 1;
  if (g_failed_flag || !g_path[0]) return 0;
  char dir[sizeof g_path];
  memcpy(dir, g_path, sizeof dir);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) {
    *slash = 0;
    if (cp_mkdir_p(dir) != 0) { set_failed(sig, "create the folder of the", errno); return 0; }
  }
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (g_opened_once ? 0 : O_TRUNC);
  int fd = open(g_path, flags, 0644);
  if (fd < 0) { set_failed(sig, "open the", errno); return 0; }
  g_fd = fd;
  if (!g_opened_once) {
    g_opened_once = 1;
    g_off = 0;
    size_t n;
    const char *meta = cp_meta_line(&n);
    if (n && write_all(fd, meta, n) != 0) cut_to(0);
    else g_off = n;
  } else {
    off_t e = lseek(fd, 0, SEEK_END);
    g_off = e > 0 ? (uint64_t)e : 0;
  }
  return 1;
}

/* Write one formatted block of nrec records at the end (lock held). */
static void emit(const char *buf, size_t len, uint64_t nrec, int sig) {
  if (g_fd < 0) {
    atomic_fetch_add(&g_lost, nrec);
    return;
  }
  if (write_all(g_fd, buf, len) != 0) {
    int e = errno;
    cut_to(g_off);
    atomic_fetch_add(&g_lost, nrec);
    if (!sig && !g_disk_warned) {
      g_disk_warned = 1;
      cp_warn("cannot write to %s: %s; trace records are lost (counted in traceDropped), still trying",
              g_path, strerror(e));
    }
    return;
  }
  g_off += len;
  atomic_fetch_add(&g_lines, nrec);
}

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
    if (t != h && !open_ok) {
      open_ok = ensure_open(sig) ? 1 : -1;
      if (open_ok > 0 && g_tail_off >= 0) {   /* records go before the tail */
        cut_to((uint64_t)g_tail_off);
        g_off = (uint64_t)g_tail_off;
        tail_cut = 1;
      }
    }
    if (open_ok < 0 && t != h) {     /* no file: let the producers go on */
      atomic_fetch_add(&g_lost, h - t);
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
        emit(buf, len, nrec, sig);
        len = 0;
        nrec = 0;
        /* A handler waits, or (writer thread) the closing thread does: hand over. */
        if (!sig && (atomic_load(&g_sig_wants) || (writer && atomic_load(&g_stop)))) {
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
  if (len) emit(buf, len, nrec, sig);
handed_over:
  if (tail_cut) {                    /* the tail goes back at the end */
    uint64_t at = g_off;
    if (g_tail && write_all(g_fd, g_tail, g_tail_len) == 0) {
      g_tail_off = (long)at;
      g_off += g_tail_len;
    } else {
      cut_to(at);
      g_tail_off = -1;
    }
  }
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
  const int nice = cp_config_get()->trace_nice, me = raw_tid();
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, (id_t)me);
  if (errno == 0 && nice > now && setpriority(PRIO_PROCESS, (id_t)me, nice) != 0)
    cp_warn("cannot lower the trace writer's priority (COLLPROF_TRACE_NICE=%d): %s; it runs at the "
            "application's", nice, strerror(errno));
  uint64_t last = mono_ms();
  while (!atomic_load(&g_stop)) {
    nap(2000000);
    uint64_t now = mono_ms();
    if (!atomic_exchange(&g_wake, 0) && now - last < 50) continue;
    last = now;
    do {
      io_lock();
      drain_locked(g_block, WRITER_BLOCK, 0, 1);
      warn_drops();
      io_unlock();
    } while (atomic_exchange(&g_wake, 0) && !atomic_load(&g_stop));
  }
  return NULL;
}

static _Atomic int g_pid;   /* the process's, at trace start */

int cp_trace_pid(void) { return atomic_load_explicit(&g_pid, memory_order_relaxed); }

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
  tl_tid = 0;
  /* The parent's descriptor and lock state are not ours to use. */
  if (g_fd >= 0) close(g_fd);
  g_fd = -1;
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  memcpy(&g_io_mu, &fresh, sizeof fresh);
  atomic_store(&g_io_owner, 0);
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
    rg->tid = my_tid();
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
    io_lock();
    cp_output_trace_path(g_path, sizeof g_path);
    io_unlock();
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
  io_lock();
  drain_locked(g_block, sizeof g_block, 0, 0);
  warn_drops();
  io_unlock();
}

uint64_t cp_trace_dropped(void) {
  uint64_t d = atomic_load(&g_lost);
  for (cp_ring *rg = atomic_load_explicit(&g_rings, memory_order_acquire); rg; rg = rg->next)
    d += atomic_load_explicit(&rg->dropped, memory_order_relaxed);
  return d;
}

uint64_t cp_trace_lines(void) { return atomic_load(&g_lines); }
uint64_t cp_trace_memory_bytes(void) { return atomic_load(&g_ring_bytes); }
int cp_trace_in_fork_child(void) { return atomic_load(&g_child); }
int cp_trace_failed(void) { return atomic_load(&g_failed); }

void cp_trace_path(char *buf, size_t cap) {
  if (!cap) return;
  if (atomic_load(&g_child)) { buf[0] = 0; return; }
  io_lock();
  snprintf(buf, cap, "%s", g_path);
  io_unlock();
}

/* Copy src to dst (rename across file systems). */
static int copy_file(const char *src, const char *dst) {
  int in = open(src, O_RDONLY | O_CLOEXEC);
  if (in < 0) return -1;
  int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) { close(in); return -1; }
  char buf[65536];
  ssize_t n;
  int rc = 0;
  while ((n = read(in, buf, sizeof buf)) > 0)
    if (write_all(out, buf, (size_t)n) != 0) { rc = -1; break; }
  if (n < 0) rc = -1;
  close(in);
  if (close(out) != 0) rc = -1;
  return rc;
}

int cp_trace_rename(const char *new_path) {
  if (!new_path || !*new_path || strlen(new_path) >= sizeof g_path) return -1;
  if (atomic_load(&g_child)) return -1;
  int rc = 0;
  io_lock();
  if (strcmp(new_path, g_path) == 0) goto out;
  if (!g_opened_once) {
    /* Nothing on disk yet.  A new folder deserves a new try (rank 0's may
     * be writable where ours was not); the same folder does not. */
    const char *a = strrchr(g_path, '/'), *b = strrchr(new_path, '/');
    size_t la = a ? (size_t)(a - g_path) : 0, lb = b ? (size_t)(b - new_path) : 0;
    int same_dir = la == lb && strncmp(g_path, new_path, la) == 0;
    snprintf(g_path, sizeof g_path, "%s", new_path);
    if (g_failed_flag && !same_dir) {
      g_failed_flag = 0;
      atomic_store(&g_failed, 0);
      if (atomic_load(&g_started) && cp_config_get()->trace_on) atomic_store(&cp_trace_accept, 1);
    }
    goto out;
  }
  char dir[sizeof g_path];
  snprintf(dir, sizeof dir, "%s", new_path);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) {
    *slash = 0;
    if (cp_mkdir_p(dir) != 0) {
      cp_warn("cannot create %s: %s; the trace stays in %s", dir, strerror(errno), g_path);
      rc = -1;
      goto out;
    }
  }
  if (rename(g_path, new_path) != 0) {
    if (errno != EXDEV || copy_file(g_path, new_path) != 0) {
      cp_warn("cannot move %s to %s: %s; the trace stays there", g_path, new_path, strerror(errno));
      unlink(new_path);
      rc = -1;
      goto out;
    }
    unlink(g_path);
    if (g_fd >= 0) {   /* the copy is the file now */
      close(g_fd);
      g_fd = -1;
    }
  }
  snprintf(g_path, sizeof g_path, "%s", new_path);
out:
  io_unlock();
  return rc;
}

long cp_trace_append_lines(const char *text, size_t len) {
  if (!text || atomic_load(&g_child)) return -1;
  cp_trace_start();
  long at = -1;
  io_lock();
  drain_locked(g_block, sizeof g_block, 0, 0);
  if (ensure_open(0)) {
    if (write_all(g_fd, text, len) == 0) {
      at = (long)g_off;
      g_off += len;
    } else {
      cut_to(g_off);
    }
  }
  io_unlock();
  return at;
}

long cp_trace_set_tail(const char *text, size_t len) {
  if (!text || atomic_load(&g_child)) return -1;
  cp_trace_start();
  char *copy = malloc(len ? len : 1);
  if (!copy) return -1;
  memcpy(copy, text, len);
  long at = -1;
  io_lock();
  drain_locked(g_block, sizeof g_block, 0, 0);
  if (ensure_open(0)) {
    if (g_tail_off >= 0) {
      cut_to((uint64_t)g_tail_off);
      g_off = (uint64_t)g_tail_off;
    }
    if (write_all(g_fd, text, len) == 0) {
      at = (long)g_off;
      g_off += len;
      free(g_tail);
      g_tail = copy;
      copy = NULL;
      g_tail_len = len;
      g_tail_off = at;
    } else {
      cut_to(g_off);
      g_tail_off = -1;
    }
  }
  io_unlock();
  free(copy);
  return at;
}

int cp_trace_truncate(long offset) {
  if (offset < 0 || atomic_load(&g_child)) return -1;
  int rc = -1;
  io_lock();
  if (ensure_open(0) && ftruncate(g_fd, offset) == 0) {
    lseek(g_fd, offset, SEEK_SET);
    g_off = (uint64_t)offset;
    if (g_tail_off >= offset) {
      g_tail_off = -1;
      free(g_tail);
      g_tail = NULL;
      g_tail_len = 0;
    }
    rc = 0;
  }
  io_unlock();
  return rc;
}

void cp_trace_close(void) {
  if (!atomic_load(&g_started) || atomic_load(&g_child)) return;
  if (atomic_exchange(&g_thr_running, 0) && !pthread_equal(pthread_self(), g_thr)) {
    atomic_store(&g_stop, 1);
    pthread_join(g_thr, NULL);
  }
  atomic_store(&cp_trace_accept, 0);
  io_lock();
  drain_locked(g_block, sizeof g_block, 0, 0);
  warn_drops();
  if (g_fd >= 0) close(g_fd);
  g_fd = -1;        /* later tail writes reopen it without truncating */
  io_unlock();
}

/* The handler drains the rings and then keeps the file lock: the process
 * is about to die (the MPI layer re-raises the signal), and a write the
 * writer thread started after us would be cut short by the kill, leaving a
 * partial last line.  cp_trace_resume_signal_safe() hands the lock back
 * when the process goes on after all (a handler that did not exit). */
void cp_trace_flush_signal_safe(void) {
  if (!atomic_load(&g_started) || atomic_load(&g_child)) return;
  int me = raw_tid();
  /* Wait up to ~700 ms (Open MPI sends SIGKILL 1 s after SIGTERM) for the
   * writer to finish its current block; never for our own thread (we
   * interrupted it mid-write: skip). */
  atomic_store(&g_sig_wants, 1);
  for (int i = 0; i < 700; i++) {
    int z = 0;
    if (atomic_compare_exchange_strong(&g_io_owner, &z, me)) {
      drain_locked(g_sigbuf, sizeof g_sigbuf, 1, 0);
      atomic_store(&g_sig_hold, 1);
      return;                      /* lock kept (and g_sig_wants): see above */
    }
    if (z == me) break;
    nap(1000000);
  }
  atomic_store(&g_sig_wants, 0);
}

void cp_trace_resume_signal_safe(void) {
  int me = raw_tid();
  if (atomic_load(&g_sig_hold) && atomic_compare_exchange_strong(&g_io_owner, &me, 0))
    atomic_store(&g_sig_hold, 0);
  atomic_store(&g_sig_wants, 0);
}

#pragma GCC visibility pop
