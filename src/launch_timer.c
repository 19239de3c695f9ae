/*
 * launch_timer.c — CUDA events around sampled kernel launches
 * (launch_timer.h says what and why).
 *
 * A process-wide array of CP_LT_SLOTS slots, each with two events made
 * once (remade when a slot moves to another CUDA context).  A slot goes
 * FREE -> ARMED (its thread records the events and claims the launch's
 * Coll/P2p; nobody else touches it) -> PENDING (closed at the thread's next
 * GroupApi start) -> READING (whoever reads it: its thread at a later
 * sampled launch, or finalize) -> FREE.  The transitions are atomic
 * compare-and-swaps, so finalize may read any thread's slots.
 *
 * What a read gives goes into the reading thread's profile block (tls.h:
 * per-thread numbers are summed at snapshot, so the block need not be the
 * recording thread's) and, with the trace on, into a "gpuLaunch" record.
 *
 * The driver calls themselves (events, contexts, capture checks) are
 * launch_events.c's; this file decides which launches to time, keeps the
 * slots and reads them.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#pragma GCC visibility push(hidden)
#include "launch_timer.h"
#include "clock.h"
#include "launch_events.h"
#include "config.h"
#include "hot.h"
#include "nccl_profiler_abi.h"
#include "paths.h"
#include "profile.h"
#include "trace.h"

enum { LT_FREE = 0, LT_ARMED = 1, LT_PENDING = 2, LT_READING = 3 };

typedef struct lt_slot {
  _Atomic int state;
  int err;                 /* an event record failed */
  int stopped;             /* the stop event was recorded */
  cp_lte_pair ev;          /* the start and stop events, and their context */
  void *stream;
  uint64_t launch_handle, handle, bytes, start_ns;
  uint32_t path, type, comm_index;
  uint32_t nops;           /* Coll/P2p claimed by all launches of the run */
  uint32_t want, n;        /* launches the run is to hold, and holds so far */
  uint32_t cur_nops, cur_path;   /* the claims of the run's latest launch */
  uint64_t cur_bytes;
  uint64_t gend_ns;        /* host time of the run's latest GroupApi stop */
  int32_t rank, tid;
  uint8_t first, multi, idle, mixed;
  uint8_t between;         /* a run between two of its calls (no launch open) */
} lt_slot;

static lt_slot g_slot[CP_LT_SLOTS];
static _Atomic uint32_t g_hint;
static _Atomic uint64_t g_timed, g_unattr, g_skipped, g_unread, g_idle;
static _Atomic int g_child;
static uint64_t g_interval_ns;   /* COLLPROF_LAUNCH_INTERVAL_US, in ns */
static uint32_t g_run = 1;       /* COLLPROF_LAUNCH_RUN */
static uint64_t g_run_gap_ns;    /* COLLPROF_LAUNCH_RUN_GAP_US, in ns */
int cp_lt_every;
uint64_t cp_lt_min_bytes;

static void after_fork_child(void) {
  /* The parent's CUDA state is not the child's. */
  atomic_store(&g_child, 1);
  __atomic_store_n(&cp_lt_every, 0, __ATOMIC_RELAXED);
}

void cp_lt_setup(void) {
  static atomic_int done;
  if (atomic_exchange(&done, 1)) return;
  pthread_atfork(NULL, NULL, after_fork_child);
  const cp_config *c = cp_config_get();
  const int n = c->launch_sample;
  g_interval_ns = (uint64_t)c->launch_interval_us * 1000u;
  g_run = c->launch_run ? c->launch_run : 1;
  g_run_gap_ns = (uint64_t)c->launch_run_gap_us * 1000u;
  cp_lt_min_bytes = c->launch_min_bytes;
  const int ok = n > 0 && cp_lte_load();   /* here, at init: no dlopen in a callback */
  /* No driver: the callbacks need not count launches for nothing. */
  if (!atomic_load(&g_child) && ok) __atomic_store_n(&cp_lt_every, n, __ATOMIC_RELAXED);
}

/* After a timed (or wanted) launch at now: how many launches until the
 * next (cp_lt_spacing).  Why a least interval: a timed launch costs about
 * the same whatever the call's size (5-9 us of GPU time on H200, and a
 * handful of driver calls on the host), so one in 64 bounds the cost at
 * 64 MiB to a few in ten thousand but at 10 us calls only to 1-2%; 5 ms
 * apart bounds it at about 0.3% at any pace.  The spacing stays a count,
 * chosen from the previous spacing's pace, so which calls get timed does
 * not depend on the gap before them: "the first launch once the interval
 * has passed" would favour calls after idle time, whose timed span holds
 * the host's launch latency. */
static void schedule_next(cp_thr *t, uint64_t now) {
  const uint64_t took = t->lt_last_ns && now > t->lt_last_ns ? now - t->lt_last_ns : 1;
  const uint32_t step = cp_lt_spacing((uint32_t)cp_lt_every, g_interval_ns, t->lt_last_ns ? t->lt_step : 0, took);
  t->lt_step = step;
  t->lt_left = step - 1;
  t->lt_last_ns = now;
}

void cp_lt_get_counts(cp_lt_counts *o) {
  o->timed = atomic_load(&g_timed);
  o->unattributed = atomic_load(&g_unattr);
  o->skipped = atomic_load(&g_skipped);
  o->unread = atomic_load(&g_unread);
  o->idle = atomic_load(&g_idle);
}

/* Read one PENDING slot into t's profile; 1 if it is done with (read or
 * given up), 0 if the GPU is not there yet. */
static int read_slot(cp_thr *t, lt_slot *s, int give_up) {
  if (!s->err && !s->stopped && s->n < s->want) {   /* a run cut short (finalize) */
    atomic_fetch_add(&g_skipped, s->n);
    return 1;
  }
  float ms = 0;
  const int q = s->err || !s->stopped ? CP_LTE_FAILED : cp_lte_elapsed(&s->ev, &ms);
  if (q == CP_LTE_NOT_READY && !give_up) return 0;
  if (q != CP_LTE_DONE) {
    atomic_fetch_add(&g_unread, s->n);
    return 1;
  }
  const uint64_t ns = ms > 0 ? (uint64_t)((double)ms * 1e6 + 0.5) : 0;
  atomic_fetch_add(&g_timed, s->n);
  /* one Coll/P2p per launch, all of one path */
  const int attributed =
      s->nops == s->n && !s->multi && !s->mixed && s->cur_path == s->path && s->cur_bytes == s->bytes;
  if (!attributed) atomic_fetch_add(&g_unattr, s->n);
  if (s->idle) atomic_fetch_add(&g_idle, s->n);
  else if (attributed && !s->first) cp_profile_launch_t(t, s->path, ns, s->n);
  if (atomic_load_explicit(&cp_hot.trace_on, memory_order_relaxed)) {
    cp_rec r;
    memset(&r, 0, sizeof r);
    r.kind = CP_REC_LAUNCH;
    r.type = attributed ? s->type : 0;
    r.path = attributed ? s->path : 0;
    r.rank = s->rank;
    r.comm = s->comm_index;
    r.pid = atomic_load_explicit(&cp_hot.pid, memory_order_relaxed);
    r.start_tid = s->tid;
    r.stop_tid = t->tid;
    r.func = attributed ? cp_path_func(s->path) : 0;
    r.start_ns = s->start_ns;
    r.stop_ns = cp_clock_now();
    r.parent_obj = s->launch_handle;
    r.event_addr = attributed ? s->handle : 0;
    r.d.launch.gpu_ns = ns;
    r.d.launch.bytes = attributed ? s->bytes : 0;
    r.d.launch.nops = s->nops;
    r.d.launch.launches = s->n;
    r.d.launch.first = s->first;
    r.d.launch.multi = s->multi;
    r.d.launch.idle = s->idle;
    cp_trace_put(&r);
  }
  return 1;
}

/* Read the PENDING slots (tid: only that thread's; 0: all). */
static void read_pending(cp_thr *t, int tid, int give_up) {
  const int mode = cp_lte_relaxed_begin();
  for (int i = 0; i < CP_LT_SLOTS; i++) {
    lt_slot *s = &g_slot[i];
    if (atomic_load_explicit(&s->state, memory_order_relaxed) != LT_PENDING) continue;
    if (tid && s->tid != tid) continue;
    int e = LT_PENDING;
    if (!atomic_compare_exchange_strong_explicit(&s->state, &e, LT_READING, memory_order_acquire,
                                                 memory_order_relaxed))
      continue;
    atomic_store_explicit(&s->state, read_slot(t, s, give_up) ? LT_FREE : LT_PENDING, memory_order_release);
  }
  cp_lte_relaxed_end(mode);
}

/* A launch on a stream not being captured, ctx current: read this
 * thread's finished launches, take a slot, record the start event. */
static void start_timed(cp_thr *t, void *stream, uint64_t launch_handle, uint32_t comm_index, int32_t rank,
                        void *ctx, uint64_t now, int first) {
  read_pending(t, t->tid, 0);
  /* The thread's last slot first: it was read just above, and its events
   * are made (cuEventCreate costs more than the rest of a timed launch). */
  const uint32_t h0 = t->lt_prev ? t->lt_prev - 1 : atomic_fetch_add_explicit(&g_hint, 1, memory_order_relaxed);
  lt_slot *s = NULL;
  uint32_t idx = 0;
  for (uint32_t k = 0; k < CP_LT_SLOTS; k++) {
    idx = (h0 + k) % CP_LT_SLOTS;
    int e = LT_FREE;
    if (atomic_compare_exchange_strong_explicit(&g_slot[idx].state, &e, LT_ARMED, memory_order_acquire,
                                                memory_order_relaxed)) {
      s = &g_slot[idx];
      break;
    }
  }
  if (!s) {
    atomic_fetch_add(&g_skipped, 1);
    return;
  }
  if (cp_lte_pair_make(&s->ev, ctx) != 0 || cp_lte_record(&s->ev, 0, stream) != 0) {
    atomic_fetch_add(&g_skipped, 1);
    atomic_store_explicit(&s->state, LT_FREE, memory_order_release);
    return;
  }
  s->err = s->stopped = 0;
  s->stream = stream;
  s->launch_handle = launch_handle;
  s->handle = s->bytes = 0;
  s->start_ns = now;
  s->path = s->type = 0;
  s->comm_index = comm_index;
  s->rank = rank;
  s->tid = t->tid;
  s->nops = s->cur_nops = s->cur_path = 0;
  s->cur_bytes = 0;
  s->n = 1;
  /* A run never holds the thread's first launch (connection set-up), nor
   * more than one in COLLPROF_LAUNCH_SAMPLE (so the countdown, which the
   * run's launches also count, is never due inside a run). */
  const uint32_t k = t->lt_run ? t->lt_run : g_run;
  s->want = first ? 1 : k < (uint32_t)cp_lt_every ? k : (uint32_t)cp_lt_every;
  s->gend_ns = 0;
  s->first = (uint8_t)first;
  s->multi = s->idle = s->mixed = s->between = 0;
  t->lt_cur = t->lt_prev = idx + 1;
}

void cp_lt_launch_start_slow(cp_thr *t, void *stream, uint64_t launch_handle, uint32_t comm_index,
                             int32_t rank) {
  const uint64_t now = cp_clock_now();
  const int first = t->lt_last_ns == 0;
  schedule_next(t, now);
  if (atomic_load(&g_child) || !cp_lte_ok()) return;   /* loaded by cp_lt_setup */
  /* First the thread's current context: NCCL launches with one current,
   * and without one the stream cannot be a stream of this thread's, so it
   * is not handed to the driver (a replay of another process's capture on
   * a GPU host has such streams, and libcuda crashed on them).  Then
   * whether the stream is being captured: then nothing else is called
   * (the earlier launches are read at a later one, or finalize). */
  void *ctx = cp_lte_launch_context(stream);
  if (!ctx) {
    atomic_fetch_add(&g_skipped, 1);
    return;
  }
  const int mode = cp_lte_relaxed_begin();
  start_timed(t, stream, launch_handle, comm_index, rank, ctx, now, first);
  cp_lte_relaxed_end(mode);
}

/* The thread's open slot, NULL when finalize took it meanwhile. */
static lt_slot *my_slot(cp_thr *t) {
  lt_slot *s = &g_slot[t->lt_cur - 1];
  if (atomic_load_explicit(&s->state, memory_order_relaxed) == LT_ARMED && s->tid == t->tid) return s;
  t->lt_cur = 0;
  return NULL;
}

/* The launch call has returned: its kernel is on the stream.  When the
 * start event has already completed, the stream had run dry before the
 * kernel arrived and the GPU waited for the host's launch, which the timed
 * span then holds (NCCL 2.28 on H200: 8-12 us between KernelLaunch start
 * and stop); such a launch is marked idle and kept out of the per-path
 * numbers.  With the stream busy, the kernel starts when the work before
 * it ends, and the span is the kernel's. */
static void record_stop(lt_slot *s) {
  const int mode = cp_lte_relaxed_begin();
  s->idle = (uint8_t)cp_lte_start_done(&s->ev);
  if (cp_lte_record(&s->ev, 1, s->stream) != 0) s->err = 1;
  else s->stopped = 1;
  cp_lte_relaxed_end(mode);
}

/* For a run, "idle" says more: the start event had completed before the
 * run's last launch was queued, so the GPU had caught up with the host
 * somewhere in the run and may have waited for it between two launches.
 * Not idle: the GPU had not begun the run when all of it was queued, so
 * the span holds the run's kernels back to back and nothing else the host
 * queued in between (the gap limit keeps that to what fits in
 * COLLPROF_LAUNCH_RUN_GAP_US). */
void cp_lt_launch_stop_slow(cp_thr *t) {
  lt_slot *s = my_slot(t);
  if (!s || s->err || s->stopped || s->between || s->n < s->want) return;
  record_stop(s);
}

void cp_lt_claim_slow(cp_thr *t, uint32_t path, uint32_t type, uint64_t bytes, uint64_t handle) {
  lt_slot *s = my_slot(t);
  if (!s) return;
  if (s->between) {   /* work of a call that launched nothing: not the run's */
    s->mixed = 1;
    return;
  }
  s->nops++;
  if (s->cur_nops++ == 0) {
    s->cur_path = path;
    s->cur_bytes = bytes;
    if (s->n == 1) {
      s->path = path;
      s->type = type;
      s->bytes = bytes;
      s->handle = handle;
    }
  }
}

/* The thread's next run length from how this one ended: twice as long
 * after a clean one (up to COLLPROF_LAUNCH_RUN), half as long after one
 * that was idle, mixed, split or dropped.  So where the host barely keeps
 * ahead of the GPU (the GPU catches up within 8 launches but not within
 * 2) runs settle at a length that still yields samples, and a thread
 * whose calls alternate between paths falls back to single launches.
 *
 * Back-off: after the f-th unclean run of 2 or more in a row, the thread
 * times 2^f clean single launches (f at most CP_LT_HOLD_SHIFT) before it
 * tries a run of 2 again; a clean run of 2 or more resets f.  Why: where
 * the application works between calls (its own kernels, a training
 * step's Python), every run of 2 is dropped at the gap and its launches
 * are lost; regrowing after each clean single launch lost every other
 * sample there (share/doc/performance.md, "Runs of launches"), this loses about one in
 * 2^CP_LT_HOLD_SHIFT once the back-off has grown. */
#define CP_LT_HOLD_SHIFT 6
static void adapt(cp_thr *t, const lt_slot *s, int clean) {
  if (s->first) return;   /* not a run: connection set-up, and the host's first launch */
  uint32_t k;
  if (clean) {
    if (s->want >= 2) t->lt_fails = 0;
    if (s->want == 1 && t->lt_hold) {
      t->lt_hold--;
      k = 1;
    } else {
      k = s->want * 2;
    }
  } else {
    k = s->want / 2;
    if (s->want >= 2) {
      if (t->lt_fails < CP_LT_HOLD_SHIFT) t->lt_fails++;
      t->lt_hold = 1u << t->lt_fails;
    }
  }
  t->lt_run = k < 1 ? 1 : k > g_run ? g_run : k;
}

static void to_pending(cp_thr *t, lt_slot *s) {
  t->lt_cur = 0;
  int e = LT_ARMED;
  atomic_compare_exchange_strong_explicit(&s->state, &e, LT_PENDING, memory_order_release, memory_order_relaxed);
}

/* A run that cannot go on before its stop event was recorded: whatever the
 * host queued since its last launch would be in the span, so nothing is
 * read; its launches are counted skipped. */
static void drop_run(cp_thr *t, lt_slot *s) {
  adapt(t, s, 0);
  t->lt_cur = 0;
  atomic_fetch_add(&g_skipped, s->n);
  int e = LT_ARMED;
  atomic_compare_exchange_strong_explicit(&s->state, &e, LT_FREE, memory_order_release, memory_order_relaxed);
}

void cp_lt_group_stop_slow(cp_thr *t, uint64_t now) {
  lt_slot *s = my_slot(t);
  if (s && !s->between) s->gend_ns = now;
}

void cp_lt_close_slow(cp_thr *t) {
  lt_slot *s = my_slot(t);
  if (!s) return;
  if (s->between) {   /* a call without a launch between two of the run's */
    drop_run(t, s);
    return;
  }
  if (s->cur_nops != 1 || s->cur_path != s->path || s->cur_bytes != s->bytes) s->mixed = 1;
  if (s->stopped || s->err || s->n >= s->want) {
    adapt(t, s, s->stopped && !s->idle && !s->mixed && !s->multi && s->n == s->want);
    to_pending(t, s);
    return;
  }
  /* A run to go on: this call's launch held one Coll/P2p of the run's path,
   * and the application did next to nothing between the two calls (a
   * kernel it queued on the stream would be inside the span). */
  const uint64_t now = cp_clock_now();
  if (s->mixed || !s->gend_ns || now - s->gend_ns > g_run_gap_ns) {
    drop_run(t, s);
    return;
  }
  s->between = 1;
}

int cp_lt_open_launch_slow(cp_thr *t, void *stream) {
  lt_slot *s = my_slot(t);
  if (!s) return 0;
  if (s->between) {   /* the run's next call */
    if (stream != s->stream) {
      drop_run(t, s);
      return 0;
    }
    s->between = 0;
    s->n++;
    s->cur_nops = 0;
    s->cur_path = 0;
    s->cur_bytes = 0;
    if (t->lt_left) t->lt_left--;
    return 1;
  }
  /* A second launch of one group: the group's work is spread over them.
   * A run not yet stopped ends here, before the new kernel is queued. */
  if (!s->stopped && !s->err) record_stop(s);
  s->multi = 1;
  adapt(t, s, 0);
  to_pending(t, s);
  return 0;
}

void cp_lt_finish(int wait_ms) {
  if (atomic_load(&g_child) || !cp_lte_ok()) return;
  cp_thr *t = cp_thr_get();
  if (!t) return;
  if (t->lt_cur) {
    cp_lt_close_slow(t);
    if (t->lt_cur) to_pending(t, &g_slot[t->lt_cur - 1]);   /* a run between calls */
  }
  /* Other threads' open launches: their groups are over by now (a run
   * between two calls is read as cut short). */
  for (int i = 0; i < CP_LT_SLOTS; i++) {
    int e = LT_ARMED;
    atomic_compare_exchange_strong(&g_slot[i].state, &e, LT_PENDING);
  }
  for (int ms = 0;; ms++) {
    read_pending(t, 0, ms >= wait_ms);
    int left = 0;
    for (int i = 0; i < CP_LT_SLOTS; i++)
      left += atomic_load_explicit(&g_slot[i].state, memory_order_relaxed) == LT_PENDING;
    if (!left || ms >= wait_ms) break;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
}
