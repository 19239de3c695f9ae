/*
 * mask_control.c — owns the value of NCCL's live activation mask
 * (interface and context: mask_control.h).
 *
 * GPU sampling rule (N = COLLPROF_GPU_SAMPLE, calls numbered k = 0, 1, ...
 * in the order cp_mask_on_api_call sees them on one thread: each thread
 * numbers its own calls, so the hook shares no written cache line between
 * threads; S(k) = KernelCh on for k):
 *   - N == 0: KernelCh never (even if the base mask has it).
 *   - N == 1: KernelCh always.
 *   - N >= 2: calls fall in blocks of N (block b = k / N).  Exactly one call
 *     per block is a periodic sample, at position p(b) = 0 for b = 0 (the
 *     very first call is sampled: the mask at attach has KernelCh; not
 *     while the start delay below runs, which is the default) and
 *     p(b) = splitmix64(b) % N after.  A fixed position (k % N == 0) would
 *     alias with loops: in a loop of 2 collectives with N = 16 only the
 *     first would ever be sampled.  The pseudo-random position keeps the
 *     rate at exactly 1/N while every path of a loop gets 1/N in expectation.
 *   - Spacing (COLLPROF_GPU_SAMPLE_US = S > 0; default 0, off): a call
 *     with KernelCh costs NCCL several microseconds at the smallest sizes
 *     (4 us for an 8 B all-reduce on 4 H100s), which on a call of 10 us is
 *     a third of it: one in 16 put 8 B-4 KiB all-reduces 4-8% above the
 *     same calls with collprof paused (test/gpu/ab.sh; 0.2-1.3% with GPU
 *     sampling off).  With S, each thread's calls fall in blocks of
 *     N x 2^j, j (0..2) the least for which a block spans S at the
 *     thread's pace: a running mean of the time per call, measured from
 *     one clock read at each block's start (a block across a time
 *     recording was off does not count).  One call per block is sampled,
 *     at a position drawn per block.  Calls more than S/N apart keep one
 *     in N; a tight loop of 10 us calls gets one in 4 N.  Off by default
 *     because the estimate suffers: a size class's mean then weighs its
 *     calls by their pace, and a block sized in a fast phase runs on into
 *     a slow one (the test app's sweep, then its contended split phase):
 *     test/gpu/estimate_check.sh put the app's all-reduce at 0.58 of the
 *     measured GPU time with S = 500 against 0.76 with S = 0, on one
 *     4-H100 host (up to 64 N instead of 4 N: 0.47).
 *   - Small calls (COLLPROF_GPU_SAMPLE_SMALL = M, default 16, and
 *     COLLPROF_GPU_SAMPLE_SMALL_BYTES = B, default 1 MiB): KernelCh's cost
 *     to NCCL is about fixed per call (4 us for an 8 B all-reduce on 4
 *     H100s: 12.8 us a call with it, 8.8 without), so one in N costs a
 *     call of 10 us 3% and one of 100 us 0.3%.  The defaults put calls
 *     under 1 MiB (under 40 us on 2-4 H100s) at one in 256: with one in
 *     64 under 64 KiB, 64-512 KiB all-reduces at one in 16 were 1.05-1.07
 *     of paused on 2 H100s, and 4 H100s had 11 of 18 sizes of 8 B-1 MiB
 *     above 1.03, none with these (test/gpu/ab.sh, share/doc/performance.md,
 *     "Small calls' GPU samples").  So with M > 1 a thread's
 *     decisions fall in two streams, each in blocks with one periodic
 *     sample as above: those made at a call of fewer than B bytes (its
 *     CollApi/P2pApi count x datatype size; 0 bytes does not count as
 *     small) in blocks of M x N, the others in blocks of N, each stream
 *     numbering its own decisions (the other stream's, and so the whole,
 *     stays what it would be alone: with no small call at all, exactly
 *     the rule above).  The decision is for the next call, so it takes
 *     the next call to be like this one, as in a loop; in a loop that
 *     alternates small and large calls the two rates trade places, which
 *     costs the small calls what one in N would and no more.  B is a power
 *     of two (config.c rounds it up), so a size class of the GPU estimate
 *     (gpu_estimate.h) is all small or all not, and within a class every
 *     call is sampled at one rate: its mean still stands for its calls.
 *     Spacing (below) replaces both streams.
 *   - Forcing: when call k was not sampled, call k+1 is not a periodic
 *     sample, and k's path has no GPU sample yet (cp_path_gpu_seen == 0),
 *     call k+1 is sampled as well — at most once per path, ever (a bitmap of
 *     paths that forced), and only while forced samples so far are fewer
 *     than 64 or fewer than (k+1)/N.  So a stream of new paths cannot keep
 *     KernelCh on (long-run rate at most 2/N), and a path whose forced
 *     sample landed on a different path (a loop) falls back to the periodic
 *     rate.  Paths with ids >= 65536 never force.
 *   - Class forcing: likewise per size class (gpu_estimate.h: log2 of the
 *     call's count x datatype size).  When call k is the second of its
 *     class on its path (the class recurs, so the next call is likely of
 *     it too), neither it nor the class's first call was sampled, and k+1
 *     is not a sample anyway (periodic, or the path's forced one, which
 *     takes its class), call k+1 is sampled -- once per path and class
 *     (bitmaps per path), within the same budget as above, for paths with
 *     ids < 4096.  It follows from the calls alone, not from when KernelCh
 *     arrives, so ranks that make the same calls with the same seed sample
 *     the same ones; a forced sample that is then skipped (one being in
 *     flight) is not asked for again.
 *     Why: the estimate stands each class's mean for that class's calls
 *     and lends a class without samples its neighbours' means; with one
 *     call in 256 under 1 MiB a sweep left most classes without, and on 2
 *     H200s (the test app's network run: all-reduce 8 B-4 MiB, 25 calls a
 *     size) the one class sampled, 4 MiB, lent 1.4 ms to every smaller
 *     call: 7.7 times the path's GPU time.  In a sweep or a loop of
 *     repeated sizes the next call is of the same size, so the sample
 *     lands in the class that asked.  Unlike a path's forced sample it is
 *     periodic, not a first-call one: it stands for its class's calls.
 *   - First-call samples: call 0, forced samples and the first call of a
 *     profiling window are not chosen at random; they are the first calls of
 *     a thread, a path or a window, which carry connection set-up and the
 *     wait for peers that have not arrived yet (milliseconds to seconds on
 *     H200, against microseconds later).  Such a sample is marked
 *     (cp_mask_sample_first) and counted once in the path's GPU estimate
 *     instead of standing for N calls (collate/reduce.c).
 *   S(k+1) is decided in the hook of call k, because NCCL reads the mask
 *   before the call's first callback (ABI doc: a change reaches the next
 *   API call).  Sampled calls are counted from the caller's `sampled` flag.
 *   With several threads issuing calls, "the next call" is whichever reads
 *   the mask next; the rate stays 1/N overall.
 *   - One sample in flight: a sampled call is published (KernelCh on) only
 *     once every KernelCh event of the previous sampled calls has stopped;
 *     until then a wanted sample is skipped (counted: gpuSamplesDeferred),
 *     and the next decision is the rule's as usual.  Skipped, not carried
 *     to the first call after: which call that is depends on when the GPU
 *     caught up, often the first call after the host waited for it (the
 *     end of a timed loop, a phase, a barrier), so carried samples would
 *     sit on calls chosen by timing rather than by the rule.  Why one in
 *     flight: the kernel writes each channel's start and stop
 *     timestamps into one of 64 slots (by the channel's work counter, which
 *     counts every work item) and NCCL's proxy thread reads them late, often
 *     milliseconds late and in bursts (seen on H200: up to 250 ms behind with
 *     KernelCh on every call).  A later KernelCh-on item that lands in the
 *     same slot first overwrites it, and NCCL hands the plugin the other
 *     item's times: spans that are negative or milliseconds long.  With one
 *     sampled call in flight no other item writes a slot.  Expected events
 *     come from the plugin (cp_mask_kc_expect at a sampled Coll/P2p: its
 *     nChannels; cp_mask_kc_done at each of their KernelCh stops); if none
 *     stops for 100 ms the expectation is dropped (a new epoch, counted), so
 *     a lost event cannot stop sampling.  N = 1 has every call sampled and no
 *     such guard: parent_link.h then discards spans whose slot may have been
 *     reused (gpuSamplesDropped).
 *
 * Start delay (COLLPROF_GPU_SAMPLE_DELAY_MS = D, default 100; 0 = none):
 * with N >= 2, KernelCh stays off (no periodic, forced, first-call or
 * window sample) until the first thread's first outermost group stop D
 * ms after its first group start; until then every decision is "off"
 * (attach included) and no path is marked
 * as forced, so each path seen meanwhile forces its sample at its first
 * call after.  Why: a second calling thread freezes the mask as it finds
 * it (below), and programs that run NCCL on several threads (nccl-tests
 * -t, one thread per GPU) start them together, 3.4 ms apart in the
 * ar4_threads capture.  Without the delay that thread found KernelCh on
 * nearly always (the first call is a sample, and each new path forces
 * one), so the whole run then had KernelCh on every call, the cost that
 * sampling exists to avoid (up to 4x for 128 KiB-2 MiB all-reduces on 2
 * H200s); with it such a process freezes with KernelCh off and keeps its
 * launch samples' GPU times (launch_timer.h).  Measured from the first
 * thread's first group start: threads whose ranks share a communicator
 * start their first calls before that first call can end (it sets up the
 * connections, with them), and others that start within D are covered.
 * The price for one thread: no KernelCh sample in its first D ms, and a
 * sweep whose small sizes pass in them has none there (their GPU time is
 * then borrowed from larger sizes: 1.4-2.9 times the exact time on a
 * 2-H200 network sweep).  So the default (auto: the variable unset, "auto"
 * or bad) runs no delay for a process that holds one rank of each of its
 * communicators at its first group start (inits with distinct commIds:
 * one GPU per process, however many communicators): NCCL ends every
 * communicator's init with a barrier of its ranks on the node
 * (bootstrapIntraNodeBarrier, after the plugin's init), so a process whose
 * threads each drive a rank of one communicator (nccl-tests -t, the
 * ar4_threads capture) has had an init per rank, two of one commId, by
 * then, and one thread driving several GPUs too.  And every thread that
 * ran an init must have exited by the first call or be the one making
 * it: a thread of the program that inited and still lives may call too
 * (threads that each init a communicator of their own, distinct commIds,
 * and call on theirs; or a program that inits on its main thread and
 * calls from a worker), while NCCL runs a group of several inits and a
 * non-blocking init on threads of its own, gone by the first call (a
 * group of one runs on the calling thread).  Left to the delay: a second
 * thread calling, later, on a communicator the first calling thread
 * inited; a freeze then may find KernelCh on (costly for that process,
 * not a hang: the stderr line says so), and an explicit
 * COLLPROF_GPU_SAMPLE_DELAY_MS keeps the delay whatever the communicators.
 *
 * Lean calls (COLLPROF_LEAN=1): a call that host sampling only counts
 * (call_modes.h, "Host sampling") and that runs without KernelCh needs no
 * event below its CollApi/P2pApi: each Coll/P2p is one per CollApi/P2pApi,
 * of the same func and bytes (every capture in shared/fixtures), so
 * start_counted.c counts it from its API event.  Yet NCCL still calls the
 * plugin for the Group, Coll, KernelLaunch and proxy events of such a
 * call, and counting those cost collprof more than 2 points of a 10 us all-reduce
 * on 4 H200s (test/gpu/ab.sh: mask 4031 counted at 1.0268 of paused, the
 * API events alone at 1.0067, the do-nothing plugin at 4031 1.0067).  So
 * when the plugin says at a call's outermost group stop that the next
 * call will be only counted (cp_mask_on_group_stop's lean_ok) and no
 * KernelCh is wanted, the mask published for it is the lean one:
 * GroupApi, CollApi, P2pApi and, if the base has it, ProxyCtrl (a proxy
 * thread's own events, tied to no call).  The other types' counts then
 * come from the calls that had them, scaled up (snapshot.c).  Never
 * while frozen (a freeze publishes the base: the other bits may change at
 * any time, only KernelCh must not), and a window's first call is full.
 *
 * Profiling periods (COLLPROF_PERIODS=delay:duration[:repeat], seconds,
 * fractions allowed; as ROCm Systems Profiler's trace periods): the clock
 * starts at the first attach; each window is preceded by its own delay:
 * off for `delay`, on for `duration`, `repeat` times (absent: 1; 0: for
 * ever).  After the last window the mask stays 0.  A timer thread (only
 * clock_nanosleep and atomic stores; stopped by cp_mask_shutdown) flips
 * the mask, because at 0 NCCL sends no callback that could.
 * Opening a window publishes the base mask without KernelCh (a group may
 * be open); KernelCh follows at the next group stop.  Closing publishes 0
 * at once only while KernelCh is off; otherwise the next group stop does.
 * At shutdown the mask is left as it is (an open window stays open; the
 * summary text closes it at the shutdown time).
 *
 * Pause (collprof_pause/collprof_resume, COLLPROF_START_PAUSED): the
 * application's own switch, closing and opening windows as the timer does;
 * profiling is on inside a period's window and while not paused.  The
 * windows recorded for the summary are those where both held.
 *
 * Off (paused, or outside a window) is not quite 0.  A CUDA graph captured
 * while NCCL sends no callback is invisible to collprof, and once KernelCh
 * is on again its replays differ from its capture in KernelCh: NCCL 2.28
 * then hangs in ncclCommDestroy (the freeze below exists for that); a
 * second calling thread that started while off would likewise go
 * unnoticed.  So while KernelCh may ever be switched on (N >= 1), the
 * mask off is GroupApi alone: NCCL sends one GroupApi (start, two states,
 * stop) per API call, nothing else (ABI doc: no child type needs it), and
 * start_counted.c only hands it to the freeze rules, records nothing and
 * counts nothing (cp_hot.off).  With N = 0 the mask off is 0.  Recording off is
 * also decided at each GroupApi, so a call whose mask was read just before
 * the switch is either wholly recorded or wholly ignored.  Frozen with
 * KernelCh off, the other bits still follow (only KernelCh must stay as
 * the freeze found it); frozen with KernelCh on, the mask stays as it is
 * and pausing only stops the recording.
 *
 * Stores to NCCL's int are relaxed atomics; hooks are lock-free and O(1).
 */
#include "mask_control.h"
#include "config.h"
#include "nccl_profiler_abi.h"
#include "tls.h"
#include "clock.h"
#include "mix64.h"
#include "affinity.h"
#include "gpu_estimate.h"   /* cp_gcls_of: class forcing */
#include "nap.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define HIDDEN __attribute__((visibility("hidden")))
#define KC ((uint32_t)ncclProfileKernelCh)
#define FORCE_CAP (1u << 16)          /* paths tracked for forcing */
#define CLS_FORCE_CAP 4096u           /* paths tracked for forcing per size class (32 KiB) */
#define FORCE_BURST 64                /* forced samples before rate-limiting */
#define WIN_CAP 64                    /* windows remembered for the summary */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Atomic(int *) g_ptr;          /* NCCL's process-wide mask int */
static uint32_t g_base;               /* base mask (config), KernelCh stripped */
static int g_off;                     /* the user's mask is 0: never profile */
static uint32_t g_n;                  /* gpu_sample */
static uint64_t g_space_ns;           /* gpu_sample_us in ns: spaced blocks (header), 0 = blocks of N */
static uint32_t g_small_m;            /* gpu_sample_small: small calls' blocks are M x N (header) */
static uint64_t g_small_bytes;        /* ...below this many bytes; 0: no call is small */
static atomic_int g_next_kc;          /* decision for the next API call */
static atomic_int g_next_first;       /* ...and it is a first-call sample (header) */
static atomic_int g_in_window = 1;    /* 0 outside a profiling window */
static atomic_int g_paused;           /* collprof_pause (or COLLPROF_START_PAUSED) */
static uint32_t g_watch;              /* the mask while off: GroupApi, or 0 for N = 0 */
static atomic_int g_frozen;           /* graph capture / second thread: KernelCh constant */
static atomic_int g_frozen_kc;        /* ...and on: then the whole mask is constant */
static atomic_int g_open_groups;      /* GroupApi events started, not stopped (first thread's) */
static atomic_int g_group_tid;        /* thread of the first GroupApi (0 = none yet) */
static atomic_int g_kc_wait;          /* window just opened: KernelCh waits for a group stop */
static atomic_int g_v4;                /* the v4 API: no GroupApi events (set by every v4 init, on
                                          any thread, while another may be attaching) */
static int g_switching;               /* N != 0, periods or lean: the mask may change at a group stop */
static int g_lean_on;                 /* COLLPROF_LEAN, v5, and the lean mask is narrower than the base */
static uint32_t g_lean_mask;          /* what a lean call asks for (header, "Lean calls") */
static atomic_int g_next_lean;        /* the next call is lean (when KernelCh is off) */
static _Atomic uint64_t g_forced[FORCE_CAP / 64]; /* paths that will not force: forced, or GPU-seen */
static _Atomic uint64_t g_cls_once[CLS_FORCE_CAP];   /* per path, bit k: a call of class k was seen */
static _Atomic uint64_t g_cls_forced[CLS_FORCE_CAP]; /* per path, bit k: class k will not force (forced, or sampled) */
static atomic_uint_fast64_t g_forced_total;
static atomic_int g_start_delay;       /* the start delay is running (header) */
static uint64_t g_delay_ns;           /* D in ns */
static uint64_t g_delay_end;          /* when it ends (cp_clock_now): set at the first group start */
static int g_delay_auto;              /* the default rule (header): none with one rank per communicator */
static atomic_int g_delay_skipped;    /* ...and it found one: no delay ran */
static atomic_uint g_attached;        /* communicator inits seen (cp_mask_attach) */
#define DELAY_IDS 64                  /* commIds kept for the auto rule; more: the delay runs */
static pthread_mutex_t g_ids_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_ids[DELAY_IDS];
static atomic_uint g_nids;            /* distinct commIds seen (cp_mask_comm_id) */
static atomic_int g_ids_shared;       /* one repeated (two ranks of a communicator), 0, too
                                         many, or init threads that cannot be told apart */
/* The threads that ran inits (under g_ids_mu), each alive until its exit
 * (init_thread_exit, through a key whose value is the slot + 1): NCCL runs
 * the inits of a group of several (ncclCommInitAll, inits between
 * GroupStart and GroupEnd) and a non-blocking one on threads of its own,
 * which have exited by the first call; the program's threads have not.
 * More than INIT_TIDS of them: the delay runs. */
#define INIT_TIDS 8
static int g_init_tid[INIT_TIDS];
static atomic_int g_init_alive[INIT_TIDS];
static unsigned g_ninit_tids;
static pthread_key_t g_ids_key;
static pthread_once_t g_ids_key_once = PTHREAD_ONCE_INIT;
static atomic_int g_ids_key_ok;
static void init_thread_exit(void *p) {
  const uintptr_t i = (uintptr_t)p;
  if (i >= 1 && i <= INIT_TIDS) atomic_store(&g_init_alive[i - 1], 0);
}
static void ids_key_create(void) {
  atomic_store(&g_ids_key_ok, pthread_key_create(&g_ids_key, init_thread_exit) == 0);
}

/* One sample in flight (header): KernelCh events still due, and the epoch
 * that a reset after GATE_STALL_NS without progress starts anew. */
static atomic_long g_kc_due;
static atomic_uint g_kc_epoch = 1;
static _Atomic uint64_t g_kc_progress;  /* KernelCh stops seen (any epoch) */
static atomic_int g_deferred;           /* samples are being skipped (g_kc_due > 0) */
static atomic_int g_gated;              /* published KernelCh off because of that */
static _Atomic uint64_t g_deferred_total, g_gate_resets;
static _Atomic uint64_t g_gate_since, g_gate_mark; /* outermost group stops (one thread, or frozen) */
#define GATE_STALL_NS 100000000ull        /* 100 ms without a KernelCh stop */

/* periods */
static int g_have_periods;
static double g_delay, g_duration;
static long g_repeat;                 /* windows; 0 = for ever */
static pthread_t g_timer;
static atomic_int g_timer_running;
static pthread_mutex_t g_shut_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_t0;                 /* CLOCK_MONOTONIC ns at first attach */
/* The windows for the summary (window_edge), under g_win_lock. */
static pthread_mutex_t g_win_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_win_start[WIN_CAP], g_win_end[WIN_CAP]; /* ns after g_t0 */
static long g_nwin;                   /* windows opened so far */
static int g_win_open;                /* the latest window has not ended */
static atomic_int g_win_used;         /* periods or a pause: the text lists windows */
static atomic_int g_inited;           /* init_once ran: g_t0 and the mask values are set */
static pthread_mutex_t g_text_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_text[CP_WINDOWS_TEXT];

static uint64_t mono_ns(void) { return cp_mono_ns(); }

static __attribute__((noinline)) int periodic_spaced(cp_thr *t, uint64_t k1);

/* Is decision j of a stream in blocks of n a periodic sample?  Block
 * b = j / n has its sample at pos = 0 for b = 0, else splitmix64(b) % n
 * (header).  Decisions come numbered 1, 2, 3...: the block's place and
 * sample are carried from the decision before, so the divisions and
 * cp_mix64 (mix64.h: splitmix64) run once per block, not at every API
 * call (they were three 64-bit divisions a call, the most of this hook's
 * cost).  A number that
 * does not follow the last one (a counter reset, the block threads share)
 * is placed afresh by the rule itself.  A zeroed stream stands at
 * decision 0 of block 0. */
static inline int periodic_stream(struct cp_gs_stream *s, uint64_t j, uint64_t n) {
  if (n <= 1) return (int)n;
  if (__builtin_expect(j == s->j + 1, 1)) {
    if (++s->i == n) {   /* a new block */
      s->i = 0;
      s->pos = cp_mix64(++s->b) % n;
    }
  } else {
    s->b = j / n;
    s->i = j % n;
    s->pos = s->b == 0 ? 0 : cp_mix64(s->b) % n;
  }
  s->j = j;
  return s->i == s->pos;
}

/* The periodic decision for the call after call k of thread t, a call of
 * `bytes` (header: spacing, small calls, or one stream). */
static int periodic_next(cp_thr *t, uint64_t k, uint64_t bytes) {
  if (g_space_ns) return periodic_spaced(t, k + 1);
  if (g_small_m <= 1) return periodic_stream(&t->gs_one, k + 1, g_n);
  if (bytes && bytes < g_small_bytes) return periodic_stream(&t->gs_small, t->gs_small.j + 1, (uint64_t)g_n * g_small_m);
  return periodic_stream(&t->gs_large, t->gs_large.j + 1, g_n);
}

/* Spacing (header): is call k1 of thread t the sample of its block?  A
 * block begins when the last one has been used up, sized from the pace. */
#define GS_MAX_LG 2
static __attribute__((noinline)) int periodic_spaced(cp_thr *t, uint64_t k1) {
  if (t->gs_i >= t->gs_blk) {
    const uint64_t now = cp_clock_now();
    const uint32_t ep = atomic_load_explicit(&cp_hot.off_epoch, memory_order_relaxed);
    if (t->gs_blk && t->gs_epoch == ep && now > t->gs_t0) {
      const uint64_t per = (now - t->gs_t0) / t->gs_blk;
      t->gs_pace = t->gs_pace ? (3 * t->gs_pace + per) / 4 : per;
    }
    t->gs_epoch = ep;
    t->gs_t0 = now;
    uint32_t n = g_n;   /* no pace measured yet: N */
    for (int j = 0; t->gs_pace && j < GS_MAX_LG && (uint64_t)n * t->gs_pace < g_space_ns; j++) n <<= 1;
    t->gs_blk = n;
    t->gs_pos = (uint32_t)(cp_mix64(k1 ^ cp_thr_seed(t)) % n);
    t->gs_i = 0;
  }
  return t->gs_i++ == t->gs_pos;
}

/* May one more call be forced, `calls` calls having been seen?  The first
 * FORCE_BURST freely (a program's distinct paths, early), then at most one
 * per N calls, so KernelCh stays on for at most 2 calls in N in the long run
 * whatever the stream of new paths. */
static int force_budget(uint64_t calls) {
  uint64_t f = atomic_load_explicit(&g_forced_total, memory_order_relaxed);
  return f < FORCE_BURST || f * g_n < calls;
}

static int profiling_on(void) { return atomic_load(&g_in_window) && !atomic_load(&g_paused); }

/* The mask NCCL should read now (frozen with KernelCh on: publish and
 * close_window change nothing at all). */
static uint32_t effective(void) {
  if (g_off) return 0;                /* user asked for nothing */
  /* the callbacks' off flag too: it follows profiling_on() a moment late
   * (window_edge, after g_in_window or g_paused changed), and a publish
   * from another thread in between must not turn the mask on while the
   * callbacks still drop every call as off */
  if (!profiling_on() || atomic_load_explicit(&cp_hot.off, memory_order_relaxed)) return g_watch;
  if (atomic_load(&g_frozen)) return g_base;   /* frozen with KernelCh off */
  int kc = atomic_load_explicit(&g_next_kc, memory_order_relaxed) &&
           !atomic_load_explicit(&g_kc_wait, memory_order_relaxed) &&
           !atomic_load_explicit(&g_gated, memory_order_relaxed) &&
           !atomic_load_explicit(&g_start_delay, memory_order_relaxed);
  if (kc) return g_base | KC;
  return atomic_load_explicit(&g_next_lean, memory_order_relaxed) ? g_lean_mask : g_base;
}

/* Store the mask if it changed.  With periods, re-check the window after the
 * store: the timer may have closed it meanwhile (seq_cst pairs with the
 * timer's store of g_in_window), and a stale non-zero mask must not stay. */
static void publish(void) {
  int *p = atomic_load_explicit(&g_ptr, memory_order_relaxed);
  if (!p || atomic_load_explicit(&g_frozen_kc, memory_order_relaxed)) return;
  uint32_t v = effective();
  if ((uint32_t)__atomic_load_n(p, __ATOMIC_RELAXED) != v)
    __atomic_store_n(p, (int)v, __ATOMIC_RELAXED);
  if (atomic_load_explicit(&g_win_used, memory_order_relaxed)) {
    atomic_thread_fence(memory_order_seq_cst);
    uint32_t v2 = effective();
    if (v2 != v) __atomic_store_n(p, (int)v2, __ATOMIC_RELAXED);
  }
}

/* At a window's end (g_in_window or g_paused already say off): the mask
 * goes to the mask off now if KernelCh is off in it (dropping other bits
 * mid-group is harmless: only KernelCh posts proxy work), else at the next
 * group stop, which publishes effective(). */
static void close_window(void) {
  int *p = atomic_load_explicit(&g_ptr, memory_order_relaxed);
  if (!p || atomic_load(&g_frozen_kc)) return;
  int cur = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  if (!(cur & (int)KC))
    __atomic_compare_exchange_n(p, &cur, (int)g_watch, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

/* A window opens (timer or resume; g_in_window and g_paused already say
 * on): the first call after it is a first-call sample, and KernelCh waits
 * for a group stop, since a group may be open now. */
static void open_window(void) {
  atomic_store(&g_next_lean, 0);
  atomic_store(&g_next_first, g_n >= 2);
  atomic_store(&g_next_kc, g_n >= 1);
  atomic_store(&g_kc_wait, 1);
}

/* After g_in_window or g_paused changed (t: when, CLOCK_MONOTONIC): the
 * recorded windows and the callbacks' off flag follow profiling_on(). */
static void window_edge(uint64_t t) {
  pthread_mutex_lock(&g_win_lock);
  int on = profiling_on();
  if (atomic_load_explicit(&cp_hot.off, memory_order_relaxed) != !on) {
    atomic_store_explicit(&cp_hot.off, !on, memory_order_relaxed);
    atomic_fetch_add_explicit(&cp_hot.off_epoch, 1, memory_order_relaxed);
  }
  if (atomic_load(&g_inited) && on != g_win_open) {
    uint64_t at = t > g_t0 ? t - g_t0 : 0;
    if (on) {
      if (g_nwin < WIN_CAP) g_win_start[g_nwin] = at;
      g_nwin++;
    } else if (g_nwin > 0 && g_nwin - 1 < WIN_CAP) {
      g_win_end[g_nwin - 1] = at;
    }
    g_win_open = on;
  }
  pthread_mutex_unlock(&g_win_lock);
}

static int parse_periods(const char *s) {
  if (!s || !*s) return 0;
  char *end;
  double d = strtod(s, &end);
  if (end == s || *end != ':' || !(d >= 0) || d > 1e9) goto bad;
  const char *q = end + 1;
  double u = strtod(q, &end);
  if (end == q || !(u > 0) || u > 1e9) goto bad;
  long r = 1;
  if (*end == ':') {
    q = end + 1;
    r = strtol(q, &end, 10);
    if (end == q || r < 0) goto bad;
  }
  if (*end != '\0') goto bad;
  g_delay = d; g_duration = u; g_repeat = r;
  return 1;
bad:
  cp_warn("COLLPROF_PERIODS=\"%s\" is not delay:duration[:repeat] (seconds); "
          "profiling all the time", s);
  return 0;
}

/* Sleep until t_ns in slices of SLICE_NS (nap.h): cp_mask_shutdown stops
 * the thread through g_stop within one slice.  0 when asked to stop. */
#define SLICE_NS 20000000ull
static atomic_int g_stop;
static int sleep_until(uint64_t t_ns) { return cp_nap_until(t_ns, &g_stop, SLICE_NS); }

/* Timer thread: only clock_nanosleep and atomic stores.  Deadlines are
 * absolute from g_t0, so windows do not drift. */
static void *timer_main(void *arg) {
  (void)arg;
  uint64_t d = (uint64_t)(g_delay * 1e9), u = (uint64_t)(g_duration * 1e9);
  uint64_t t = g_t0;
  for (long i = 0; g_repeat == 0 || i < g_repeat; i++) {
    t += d;
    if (!sleep_until(t)) return NULL;
    open_window();                        /* first group after the open sampled */
    atomic_store(&g_in_window, 1);
    window_edge(t);
    publish();
    t += u;
    int go_on = sleep_until(t);
    if (!go_on) return NULL;              /* shutdown closes the window text */
    atomic_store(&g_in_window, 0);
    window_edge(t);
    close_window();
  }
  return NULL;
}

static void init_once(void) {
  const cp_config *c = cp_config_get();
  g_base = c->event_mask & ~KC & NCCL_PROFILE_ALL_EVENTS;
  g_n = c->gpu_sample > 0 ? (uint32_t)c->gpu_sample : 0;
  g_space_ns = (uint64_t)c->gpu_sample_us * 1000u;
  g_small_m = c->gpu_sample_small_bytes ? c->gpu_sample_small : 1;
  g_small_bytes = c->gpu_sample_small_bytes;
  g_off = (c->event_mask & NCCL_PROFILE_ALL_EVENTS) == 0;
  /* A mask of KernelCh alone cannot be sampled: an unsampled call would
   * read 0, send no callback, and nothing would turn KernelCh back on. */
  if (g_base == 0 && g_n > 1) g_n = 1;
  if (atomic_load(&g_v4) && g_n > 1) {
    cp_warn("COLLPROF_GPU_SAMPLE=%u needs the v5 profiler API (NCCL 2.28): this NCCL uses v4, "
            "which gives no safe point to switch KernelCh, so it stays off "
            "(COLLPROF_GPU_SAMPLE=1 turns it on for every call)", g_n);
    g_n = 0;
  }
  atomic_store(&g_next_kc, g_n >= 1);     /* the first call is sampled */
  atomic_store(&g_next_first, g_n >= 2);  /* ...as a first-call sample (N = 1: all calls are) */
  g_delay_ns = (uint64_t)c->gpu_sample_delay_ms * 1000000u;
  g_delay_auto = c->gpu_sample_delay_auto;
  if (g_n >= 2 && g_delay_ns) {           /* ...unless the start delay runs (header) */
    atomic_store(&g_next_kc, 0);
    atomic_store(&g_next_first, 0);
    atomic_store(&g_start_delay, 1);
  }
  g_watch = g_n >= 1 && !atomic_load(&g_v4) ? (uint32_t)ncclProfileGroupApi : 0;
  g_t0 = mono_ns();
  g_have_periods = parse_periods(c->periods);
  if (c->start_paused) atomic_store(&g_paused, 1);
  /* N = 1 too: a pause with KernelCh on waits for a group stop */
  g_lean_mask = (uint32_t)(ncclProfileGroupApi | ncclProfileCollApi | ncclProfileP2pApi) |
                (g_base & (uint32_t)ncclProfileProxyCtrl);
  g_lean_on = c->lean && !atomic_load(&g_v4) && !g_off && (g_base & ~g_lean_mask) != 0;
  atomic_store(&cp_hot.lean_live, g_lean_on && !atomic_load(&g_frozen));
  g_switching = g_n >= 1 || g_have_periods || g_lean_on;
  if (g_have_periods || atomic_load(&g_paused)) atomic_store(&g_win_used, 1);
  if (g_have_periods) atomic_store(&g_in_window, 0);
  /* the first window: from now if profiling is on (a pause before the
   * first init counts from here) */
  atomic_store(&g_inited, 1);
  window_edge(g_t0);
  if (g_have_periods) {
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 64 * 1024);
    if (pthread_create(&g_timer, &a, timer_main, NULL) == 0) {
      atomic_store(&g_timer_running, 1);
    } else {
      cp_warn("cannot start the COLLPROF_PERIODS timer; profiling all the time");
      g_have_periods = 0;
      atomic_store(&g_in_window, 1);
      window_edge(mono_ns());
    }
    pthread_attr_destroy(&a);
  }
}

HIDDEN uint32_t cp_mask_attach(int *eActivationMask) {
  pthread_once(&g_once, init_once);
  if (!eActivationMask) return 0;
  atomic_fetch_add_explicit(&g_attached, 1, memory_order_relaxed);   /* the start delay's count (header) */
  atomic_store(&g_ptr, eActivationMask);
  if (atomic_load(&g_frozen))          /* keep the frozen value (one int per process) */
    return (uint32_t)__atomic_load_n(eActivationMask, __ATOMIC_RELAXED);
  uint32_t v = effective();
  __atomic_store_n(eActivationMask, (int)v, __ATOMIC_RELAXED);
  if (g_have_periods) {
    atomic_thread_fence(memory_order_seq_cst);
    uint32_t v2 = effective();
    if (v2 != v) __atomic_store_n(eActivationMask, (int)(v = v2), __ATOMIC_RELAXED);
  }
  return v;
}

/* Whether the call after call k is forced for `path`, whose bit in
 * g_forced is clear; out of line (the hook below then calls nothing in a
 * loop and saves no register). */
static __attribute__((noinline)) int force_or_settle(uint32_t path, uint64_t k, unsigned cls) {
  const uint64_t bit = 1ull << (path % 64);
  _Atomic uint64_t *w = &g_forced[path / 64];
  if (cp_path_gpu_seen(path)) {
    atomic_fetch_or_explicit(w, bit, memory_order_relaxed);   /* settled: not forced */
    return 0;
  }
  if (!force_budget(k + 1) || (atomic_fetch_or_explicit(w, bit, memory_order_relaxed) & bit)) return 0;
  atomic_fetch_add_explicit(&g_forced_total, 1, memory_order_relaxed);
  /* the path's first sample is of its class: that class forces no more */
  if (path < CLS_FORCE_CAP) atomic_fetch_or_explicit(&g_cls_forced[path], 1ull << cls, memory_order_relaxed);
  return 1;
}

/* Class forcing (header): a call of size class cls on `path`, whose bit
 * in g_cls_forced is clear.  A class's first call only notes it (a call
 * after it of the same size is not known to come); at its second the call
 * after is forced, unless either call had KernelCh or the next is a
 * sample anyway (`taken`), or beyond the budget; the class is then marked,
 * so it asks once.  Decided from the calls alone, not from when KernelCh
 * arrives, so ranks that make the same calls sample the same ones. */
static __attribute__((noinline)) int cls_call(uint32_t path, uint64_t k, unsigned cls, int sampled, int taken) {
  const uint64_t bit = 1ull << cls;
  if (!(atomic_fetch_or_explicit(&g_cls_once[path], bit, memory_order_relaxed) & bit)) {
    if (sampled) atomic_fetch_or_explicit(&g_cls_forced[path], bit, memory_order_relaxed);
    return 0;
  }
  if (atomic_fetch_or_explicit(&g_cls_forced[path], bit, memory_order_relaxed) & bit) return 0;
  if (taken || !force_budget(k + 1)) return 0;
  atomic_fetch_add_explicit(&g_forced_total, 1, memory_order_relaxed);
  return 1;
}

HIDDEN void cp_mask_on_api_call(uint32_t path, int sampled, uint64_t bytes) {
  /* Counted per thread (tls.h): this hook runs at every API call, and a
   * shared counter would be a locked read-modify-write on a cache line all
   * calling threads write.  k numbers this thread's calls; the rate stays
   * 1/N on every thread and so overall. */
  cp_thr *t = cp_thr_get();
  if (sampled) cp_inc(&t->api_sampled, 1);
  uint64_t k = cp_ld(&t->api_calls);
  cp_inc(&t->api_calls, 1);
  if (g_n <= 1) return;   /* N = 1: always on, N = 0: always off (init) */
  if (atomic_load_explicit(&g_frozen, memory_order_relaxed)) return;
  if (__builtin_expect(atomic_load_explicit(&g_start_delay, memory_order_relaxed), 0)) {
    /* start delay (header): no sample wanted, and no path marked forced */
    if (atomic_load_explicit(&g_next_kc, memory_order_relaxed)) atomic_store_explicit(&g_next_kc, 0, memory_order_relaxed);
    if (atomic_load_explicit(&g_next_first, memory_order_relaxed)) atomic_store_explicit(&g_next_first, 0, memory_order_relaxed);
    return;
  }
  /* Decided here, published at the group stop (header: never inside a
   * group). */
  int next = periodic_next(t, k, bytes), first = 0;
  /* Forcing (header).  A path's bit in g_forced says it will never force
   * again: it forced, or it was found GPU-seen (which it stays).  So in a
   * loop each call reads one word, not the budget and the path table.
   * Then its size class's bit in g_cls_forced, likewise (class forcing:
   * a periodic sample, not a first-call one). */
  const unsigned cls = cp_gcls_of(bytes);
  if (!next && !sampled && path < FORCE_CAP &&
      !(atomic_load_explicit(&g_forced[path / 64], memory_order_relaxed) & (1ull << (path % 64))))
    next = first = force_or_settle(path, k, cls);
  if (path < CLS_FORCE_CAP && !(atomic_load_explicit(&g_cls_forced[path], memory_order_relaxed) & (1ull << cls)))
    next |= cls_call(path, k, cls, sampled, sampled || next);
  if (atomic_load_explicit(&g_next_kc, memory_order_relaxed) != next)
    atomic_store_explicit(&g_next_kc, next, memory_order_relaxed);
  if (atomic_load_explicit(&g_next_first, memory_order_relaxed) != first)
    atomic_store_explicit(&g_next_first, first, memory_order_relaxed);
}

HIDDEN void cp_mask_api_v4(void) { atomic_store(&g_v4, 1); }

HIDDEN void cp_mask_comm_id(uint64_t comm_id) {
  const pid_t tid = (pid_t)syscall(SYS_gettid);   /* init only: a system call is fine here */
  pthread_mutex_lock(&g_ids_mu);   /* init only: rare, and may run on several threads */
  unsigned n = atomic_load(&g_nids), i = 0;
  while (i < n && g_ids[i] != comm_id) i++;
  if (comm_id == 0 || i < n || n == DELAY_IDS) atomic_store(&g_ids_shared, 1);
  else g_ids[n] = comm_id, atomic_store(&g_nids, n + 1);
  /* this thread among the init threads (above), alive from now on; the
   * library is never unmapped (plugin.c pin_library), so the destructor
   * can run whenever the thread ends */
  unsigned k = 0;
  while (k < g_ninit_tids && g_init_tid[k] != (int)tid) k++;
  /* a known tid not alive: an exited thread's id, taken by a new thread */
  if (k == g_ninit_tids || !atomic_load(&g_init_alive[k])) {
    pthread_once(&g_ids_key_once, ids_key_create);
    if (k == INIT_TIDS || !atomic_load(&g_ids_key_ok) ||
        pthread_setspecific(g_ids_key, (void *)(uintptr_t)(k + 1)) != 0) {
      atomic_store(&g_ids_shared, 1);   /* cannot tell: the delay runs */
    } else {
      g_init_tid[k] = (int)tid;
      atomic_store(&g_init_alive[k], 1);
      if (k == g_ninit_tids) g_ninit_tids = k + 1;
    }
  }
  pthread_mutex_unlock(&g_ids_mu);
}

HIDDEN uint32_t cp_mask_start_delay_ms(void) {
  pthread_once(&g_once, init_once);
  return atomic_load(&g_delay_skipped) ? 0 : (uint32_t)(g_delay_ns / 1000000u);
}

static char g_frozen_text[96];         /* for the rank record, set once at the freeze */
static atomic_int g_frozen_text_ready; /* ...and published after it is written */

static void freeze(const char *why, const char *hazard) {
  if (atomic_load_explicit(&g_frozen, memory_order_relaxed)) return;
  const int kc = cp_mask_kernelch_on();
  /* g_frozen_kc before g_frozen: a publish that sees the freeze sees how */
  if (kc) atomic_store(&g_frozen_kc, 1);
  if (atomic_exchange(&g_frozen, 1)) return;
  atomic_store(&cp_hot.lean_live, 0);   /* no lean call any more (below) */
  atomic_store(&g_next_first, 0);   /* from now on every call is alike */
  /* no lean call any more: with KernelCh off, the base (effective) */
  if (atomic_exchange(&g_next_lean, 0) && !kc) publish();
  snprintf(g_frozen_text, sizeof g_frozen_text, "%s, KernelCh %s", why, kc ? "on" : "off");
  atomic_store_explicit(&g_frozen_text_ready, 1, memory_order_release);
  /* Only KernelCh must stay as it is: with it off, windows and pauses
   * still switch the other bits (publish, close_window); with it on,
   * nothing changes any more and periods end here. */
  if (g_n <= 1 && !g_have_periods) return;   /* nothing would change anyway: no notice */
  cp_warn("%s: the event mask is frozen from now on (KernelCh %s, no more GPU sampling%s), "
          "because NCCL 2.28 hangs in ncclCommDestroy when KernelCh changes %s",
          why, kc ? "on for every call" : "off", g_have_periods && kc ? " or profiling periods" : "",
          hazard);
}

/* Every thread that ran an init has exited or is `tid` (the first call's):
 * no thread of the program but this one has been seen (header). */
static int init_threads_gone_but(int tid) {
  pthread_mutex_lock(&g_ids_mu);   /* once, at the first group start */
  int ok = 1;
  for (unsigned k = 0; k < g_ninit_tids; k++)
    if (g_init_tid[k] != tid && atomic_load(&g_init_alive[k])) ok = 0;
  pthread_mutex_unlock(&g_ids_mu);
  return ok;
}

HIDDEN void cp_mask_on_group_start(int tid) {
  /* Frozen: the count of open groups is never read again, and every
   * calling thread writing it would move its cache line between them at
   * every call (collprof-bench, 2 threads on 2 communicators, default
   * mask: 1.07x the events per second of one before, 1.32x and 1.69x in
   * two runs after; this VM's spread is large). */
  if (!g_switching || atomic_load_explicit(&g_frozen, memory_order_relaxed)) return;
  int first = atomic_load_explicit(&g_group_tid, memory_order_relaxed);
  if (__builtin_expect(first == tid, 1) ||
      (first == 0 && atomic_compare_exchange_strong(&g_group_tid, &first, tid))) {
    /* first still 0: this is the process's first group start, which
     * starts the start delay's clock (header) */
    if (__builtin_expect(first == 0, 0)) {
      g_delay_end = cp_clock_now() + g_delay_ns;
      /* auto, one rank of each communicator: no delay (header); the next API call
       * decides by the rule (its path forces a sample) */
      if (g_delay_auto && atomic_load_explicit(&g_start_delay, memory_order_relaxed) &&
          !atomic_load(&g_ids_shared) && atomic_load(&g_nids) == atomic_load(&g_attached) &&
          init_threads_gone_but(tid)) {
        atomic_store(&g_delay_skipped, 1);
        atomic_store(&g_start_delay, 0);
      }
    }
    /* Only the first calling thread counts its groups (a second thread
     * freezes the mask, after which the count is never read), so a plain
     * load and store do, not a locked read-modify-write at every call. */
    atomic_store_explicit(&g_open_groups, atomic_load_explicit(&g_open_groups, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    return;
  }
  freeze("NCCL calls from a second thread", "while another thread is inside a group");
}

/* At the outermost group stop, before publishing: skip a wanted sample
 * while an earlier one's KernelCh events are due (header), unless none has
 * stopped for GATE_STALL_NS (a lost expectation: start afresh). */
static void gate(void) {
  if (g_n < 2 || atomic_load_explicit(&g_frozen, memory_order_relaxed)) return;
  int want = atomic_load_explicit(&g_next_kc, memory_order_relaxed);
  int due = atomic_load_explicit(&g_kc_due, memory_order_acquire) > 0;
  int hold = 0;
  /* g_deferred: an episode of skipping, from the first skipped sample until
   * nothing is due; the stall clock runs from its start or from the last
   * KernelCh stop seen in it, whatever calls go by unsampled meanwhile */
  if (want && due) {
    uint64_t now = cp_clock_now(), done = atomic_load_explicit(&g_kc_progress, memory_order_relaxed);
    if (!atomic_load_explicit(&g_deferred, memory_order_relaxed) ||
        done != atomic_load_explicit(&g_gate_mark, memory_order_relaxed)) {
      atomic_store_explicit(&g_gate_since, now, memory_order_relaxed);   /* skipping starts, or */
      atomic_store_explicit(&g_gate_mark, done, memory_order_relaxed);   /* KernelCh still come */
      hold = 1;
    } else if (now - atomic_load_explicit(&g_gate_since, memory_order_relaxed) < GATE_STALL_NS) {
      hold = 1;
    } else {
      atomic_fetch_add_explicit(&g_kc_epoch, 1, memory_order_relaxed);   /* late stops no longer count */
      atomic_store_explicit(&g_kc_due, 0, memory_order_release);
      atomic_fetch_add_explicit(&g_gate_resets, 1, memory_order_relaxed);
      due = 0;
    }
  }
  if (hold) {
    atomic_fetch_add_explicit(&g_deferred_total, 1, memory_order_relaxed);   /* one skipped */
    if (!atomic_exchange_explicit(&g_deferred, 1, memory_order_relaxed)) cp_affinity_gpu_lag();
  } else if (!due && atomic_load_explicit(&g_deferred, memory_order_relaxed)) {
    atomic_store_explicit(&g_deferred, 0, memory_order_relaxed);   /* the episode is over */
  }
  if (atomic_load_explicit(&g_gated, memory_order_relaxed) != hold)
    atomic_store_explicit(&g_gated, hold, memory_order_relaxed);
}

/* The start delay (header) at the first thread's outermost group stops:
 * it ends at the first one D after its first group start (the next API
 * call then decides by the rule).  Out of line: it runs only in the first
 * D ms. */
static __attribute__((noinline)) void delay_tick(void) {
  if (cp_clock_now() >= g_delay_end) atomic_store(&g_start_delay, 0);
}

HIDDEN void cp_mask_on_group_stop(int lean_ok) {
  if (!g_switching || atomic_load_explicit(&g_frozen, memory_order_relaxed)) return;
  /* the first calling thread's stop (cp_mask_on_group_start: no other
   * thread stops a group before the mask is frozen) */
  const int open = atomic_load_explicit(&g_open_groups, memory_order_relaxed);
  atomic_store_explicit(&g_open_groups, open - 1, memory_order_relaxed);
  if (open != 1) return;
  if (__builtin_expect(atomic_load_explicit(&g_start_delay, memory_order_relaxed), 0)) delay_tick();
  if (atomic_load_explicit(&g_kc_wait, memory_order_relaxed)) atomic_store(&g_kc_wait, 0);
  const int lean = g_lean_on && lean_ok;
  if (atomic_load_explicit(&g_next_lean, memory_order_relaxed) != lean)
    atomic_store_explicit(&g_next_lean, lean, memory_order_relaxed);
  /* The common case, a call after which no sample is wanted, none is
   * being skipped and neither periods nor a pause were ever used: gate()
   * would change nothing and effective() is the base or lean mask (not
   * frozen, above; profiling on, since only periods and pauses turn it
   * off). */
  if (__builtin_expect(!(atomic_load_explicit(&g_next_kc, memory_order_relaxed) |
                         atomic_load_explicit(&g_gated, memory_order_relaxed) |
                         atomic_load_explicit(&g_deferred, memory_order_relaxed) |
                         atomic_load_explicit(&g_win_used, memory_order_relaxed)), 1)) {
    int *p = atomic_load_explicit(&g_ptr, memory_order_relaxed);
    const int v = (int)(lean ? g_lean_mask : g_base);
    if (p && !atomic_load_explicit(&g_frozen_kc, memory_order_relaxed) && __atomic_load_n(p, __ATOMIC_RELAXED) != v)
      __atomic_store_n(p, v, __ATOMIC_RELAXED);
    return;
  }
  gate();
  publish();   /* no group open: the one point where KernelCh may change */
}

HIDDEN uint32_t cp_mask_kc_expect(uint32_t n) {
  if (g_n < 2 || n == 0) return 0;
  atomic_fetch_add_explicit(&g_kc_due, (long)n, memory_order_relaxed);
  return atomic_load_explicit(&g_kc_epoch, memory_order_relaxed);
}

HIDDEN void cp_mask_kc_done(uint32_t epoch) {
  if (epoch == 0) return;
  atomic_fetch_add_explicit(&g_kc_progress, 1, memory_order_relaxed);
  if (epoch == atomic_load_explicit(&g_kc_epoch, memory_order_relaxed))
    atomic_fetch_sub_explicit(&g_kc_due, 1, memory_order_release);
}

HIDDEN void cp_mask_kc_lost(void) {
  if (g_n < 2) return;
  long due = atomic_load_explicit(&g_kc_due, memory_order_relaxed);
  while (due > 0 && !atomic_compare_exchange_weak_explicit(&g_kc_due, &due, due - 1, memory_order_release,
                                                           memory_order_relaxed)) {}
  atomic_fetch_add_explicit(&g_kc_progress, 1, memory_order_relaxed);
}

HIDDEN uint64_t cp_mask_samples_deferred(void) {
  return atomic_load_explicit(&g_deferred_total, memory_order_relaxed);
}
HIDDEN uint64_t cp_mask_gate_resets(void) { return atomic_load_explicit(&g_gate_resets, memory_order_relaxed); }

HIDDEN void cp_mask_on_graph_capture(void) {
  freeze("CUDA graph capture seen", "between a graph's capture and its replays");
}

HIDDEN const char *cp_mask_frozen_text(void) {
  return atomic_load_explicit(&g_frozen_text_ready, memory_order_acquire) ? g_frozen_text : "";
}

HIDDEN int cp_mask_frozen(void) { return atomic_load_explicit(&g_frozen, memory_order_relaxed); }

HIDDEN int cp_mask_lean_on(void) { return g_lean_on; }

HIDDEN int cp_mask_lean_value(uint32_t v) { return g_lean_on && v == g_lean_mask; }

HIDDEN uint32_t cp_mask_now(void) {
  int *p = atomic_load_explicit(&g_ptr, memory_order_relaxed);
  return p ? (uint32_t)__atomic_load_n(p, __ATOMIC_RELAXED) : 0;
}

HIDDEN int cp_mask_kernelch_on(void) { return (cp_mask_now() & KC) != 0; }

HIDDEN int cp_mask_sample_first(void) {
  return atomic_load_explicit(&g_next_first, memory_order_relaxed);
}

HIDDEN uint64_t cp_mask_sampled_calls(void) {
  uint64_t n = 0;
  for (cp_thr *t = cp_thr_all(); t; t = t->next) n += cp_ld(&t->api_sampled);
  return n;
}

/* "0.050-0.100 0.150-0.200" in seconds after the first init; an open window
 * ends in "-open".  Not on a hot path (summary only). */
HIDDEN const char *cp_mask_windows(void) {
  pthread_mutex_lock(&g_text_lock);
  g_text[0] = '\0';
  pthread_mutex_lock(&g_win_lock);
  if (atomic_load(&g_win_used)) {
    long n = g_nwin;
    int closed = !g_win_open;
    size_t len = 0;
    long shown = 0;
    for (long i = 0; i < n && i < WIN_CAP; i++, shown++) {
      char one[48];
      int open = (i == n - 1 && !closed);
      if (open)
        snprintf(one, sizeof one, "%s%.3f-open", i ? " " : "", g_win_start[i] / 1e9);
      else
        snprintf(one, sizeof one, "%s%.3f-%.3f", i ? " " : "", g_win_start[i] / 1e9,
                 g_win_end[i] / 1e9);
      size_t l = strlen(one);
      if (len + l + sizeof " (+9999999999 more)" > sizeof g_text) break;   /* room for the tail */
      memcpy(g_text + len, one, l + 1);
      len += l;
    }
    if (n > shown)
      snprintf(g_text + len, sizeof g_text - len, " (+%ld more)", n - shown);
    else if (n == 0)
      snprintf(g_text, sizeof g_text, "none yet");
  }
  pthread_mutex_unlock(&g_win_lock);
  pthread_mutex_unlock(&g_text_lock);
  return g_text;
}

HIDDEN void cp_mask_shutdown(void) {
  pthread_mutex_lock(&g_shut_lock);
  if (atomic_exchange(&g_timer_running, 0)) {
    atomic_store(&g_stop, 1);
    pthread_join(g_timer, NULL);          /* within one SLICE_NS */
  }
  /* An open window is closed now for the summary (the mask stays). */
  pthread_mutex_lock(&g_win_lock);
  if (atomic_load(&g_win_used) && g_win_open) {
    if (g_nwin > 0 && g_nwin - 1 < WIN_CAP) g_win_end[g_nwin - 1] = mono_ns() - g_t0;
    g_win_open = 0;
  }
  pthread_mutex_unlock(&g_win_lock);
  pthread_mutex_unlock(&g_shut_lock);
}

/* collprof_pause / collprof_resume (pause.c).  Before the first init only
 * the flag is set; init_once starts from it. */
HIDDEN int cp_mask_set_paused(int paused) {
  pthread_mutex_lock(&g_shut_lock);   /* one pause or resume at a time */
  int was = atomic_load(&g_paused);
  if (was == paused) { pthread_mutex_unlock(&g_shut_lock); return was; }
  atomic_store(&g_win_used, 1);
  if (!paused && atomic_load(&g_in_window)) open_window();
  atomic_store(&g_paused, paused);
  window_edge(mono_ns());
  if (atomic_load(&g_inited)) {
    if (paused) close_window();
    else publish();
  }
  pthread_mutex_unlock(&g_shut_lock);
  return was;
}

HIDDEN int cp_mask_paused(void) { return atomic_load(&g_paused); }
