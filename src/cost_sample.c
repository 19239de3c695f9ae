/*
 * cost_sample.c — collprof's own cost on the threads NCCL calls it on,
 * measured in the application by sampling in time (cost_sample.h).
 *
 * Why: the per-event cost selfcost.c measures at start-up (selfcost.c) is a
 * hot loop's.  In a job NCCL's own work between two callbacks evicts
 * collprof's lines, and on H200 hosts a callback on the application
 * thread took 3-5x its hot-loop time (phase_timing.h); host sampling's
 * counted events cost another amount again, and NCCL's proxy thread pays
 * for its own.  Only timing the callbacks where they run says what they
 * cost, and timing every one would cost two clock reads per callback.
 *
 * How: a thread of ours opens windows of COLLPROF_COST_WINDOW_US (1 ms)
 * at random times, COLLPROF_COST_SAMPLE_MS (100 ms) apart on average (a
 * gap drawn uniformly from 0 to twice the mean, so no period of the
 * application's lines up with them).  Inside a window the plugin's
 * exported structs name timing wrappers instead of the callbacks
 * (plugin.c, cp_plugin_timed): NCCL reads the function pointer from the
 * struct at every call (its loader keeps a pointer to the plugin's
 * symbol), so outside the windows a callback costs exactly what it did.
 * A wrapper reads the clock before and after the callback and adds the
 * difference, less the clock reads' own (calibrated at start), to its
 * thread's block.  Every callback of every thread in a window is timed,
 * so the time inside windows is a uniform sample of the run's time: the
 * callbacks' time there x run / window time estimates all of it, the
 * summary's overhead line.  The timing costs only the windows' callbacks
 * (10-30 ns each, 1% of the time by default); since it slows them, the
 * application made fewer calls in a window than it would have, so that
 * slowdown (a wrapper's cost, calibrated at start, x the callbacks timed)
 * is taken out of the window and run times before the scaling.  The
 * spread of the windows' times gives the estimate's standard error.
 * Short runs: 100 ms apart, a run of a few tenths of a second gets a few
 * windows, which may catch no callback (then collate/pset_rank.c falls back on
 * the start-up figure: in test/gpu/run.sh, 4 steps of 14 on every rank).
 * So the windows start DENSE_DIV times as often (a dense phase) and keep
 * that rate until DENSE_AFTER_NS after the first window that caught a
 * callback, or until the process has made DENSE_EVENTS events (recorded
 * or counted: a run that calls so often has callbacks in every window,
 * and collprof-bench's rows, 700,000 events in 70 ms, would otherwise
 * time 4% of their callbacks instead of 1%).  The run is then two strata,
 * each scaled by its own windows (a stratified estimate: each window
 * stands for the time of its own stratum), and their errors are combined.
 * The dense phase costs the timing of DENSE_DIV times as many callbacks
 * for a second or so.  Until the later stratum has two windows the run is
 * scaled as one (it is then mostly the dense phase).  A rank whose windows
 * still caught no callback (a run shorter than the first gap, or one that
 * seldom calls NCCL) is left to the start-up figure.
 * One-off set-ups inside callbacks (oneoff.h) are timed whole and left out
 * of the windows' times (cp_cost_end); the estimate adds them unscaled.
 * COLLPROF_COST_WINDOW_US >= 1000 x COLLPROF_COST_SAMPLE_MS: one window
 * from start to end, every callback timed (the tests' exact count).
 * COLLPROF_COST_SAMPLE_MS=0: never.  collprof_shutdown ends the sampling:
 * the time covered stops there (test/unit/test_cost_sample.c).
 */
#include "cost_sample.h"
#include "config.h"
#include "mix64.h"
#include "nap.h"
#include "oneoff.h"
#include "plugin.h"
#include "tls.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define HIDDEN __attribute__((visibility("hidden")))
#define NAP_SLICE_NS 5000000ull   /* shutdown waits for the thread at most this long */
#define DENSE_DIV 4                  /* the dense phase's windows: this many times as often */
#define DENSE_AFTER_NS 1000000000ull /* ...until this long after the first that timed a callback */
#define DENSE_EVENTS 100000ull       /* ...or until the process has made this many events */

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;   /* window bookkeeping, snapshot */
static pthread_t g_thread;
static atomic_int g_running, g_stop;
static uint64_t g_floor_ns;     /* a wrapper's clock reads, timed around nothing */
static uint64_t g_wrap_ps;      /* what a wrapper adds to a callback's time, in ps */
static uint64_t g_t_start;      /* cp_clock_now at start; 0: never started */
static uint64_t g_t_end;        /* ...at shutdown (under g_mu); 0: still sampling */
static int g_always;            /* one window from start to end: every callback timed */
static uint64_t g_windows, g_window_ns, g_open_since;   /* under g_mu */
/* Per closed window, the callbacks' time in it (the threads' sums, read
 * at each close): their count, sum and sum of squares, for the estimate's
 * standard error (cp_cost_read); under g_mu */
static uint64_t g_closed, g_last_sum, g_last_n;
static long double g_s1, g_s2;
static uint64_t g_every_ns, g_window_len_ns;
/* The dense phase (header), under g_mu: its windows' rate while g_dense;
 * g_dense_until set at the first window that timed a callback; at its end
 * the sums so far become the first stratum (g_first, span > 0). */
static int g_dense;
static uint64_t g_dense_until;
typedef cp_cost_stratum stratum;
static stratum g_first;

/* Until t (CLOCK_MONOTONIC), in slices (nap.h); 0 when asked to stop. */
static int nap_until(uint64_t t) { return cp_nap_until(t, &g_stop, NAP_SLICE_NS); }

static void window_open(uint64_t now) {
  pthread_mutex_lock(&g_mu);
  g_open_since = now;
  g_windows++;
  cp_plugin_timed(1);
  pthread_mutex_unlock(&g_mu);
}

/* The threads' timed time and callbacks, and their events (recorded and
 * counted: the dense phase's end, header). */
static uint64_t timed_sum(uint64_t *n, uint64_t *events) {
  uint64_t s = 0, c = 0, e = 0;
  for (cp_thr *t = cp_thr_all(); t; t = t->next) {
    s += cp_ld(&t->cost_ns);
    c += cp_ld(&t->cost_n);
    e += cp_ld(&t->events) + cp_ld(&t->counted);
  }
  *n = c;
  *events = e;
  return s;
}

static void window_close(void) {
  pthread_mutex_lock(&g_mu);
  if (g_open_since) {
    cp_plugin_timed(0);
    const uint64_t now = cp_clock_now();
    g_window_ns += now > g_open_since ? now - g_open_since : 0;
    g_open_since = 0;
    /* a callback still inside a wrapper adds to the next window's share */
    uint64_t n, events;
    const uint64_t sum = timed_sum(&n, &events), d = sum > g_last_sum ? sum - g_last_sum : 0;
    const int caught = n > g_last_n;
    g_last_sum = sum;
    g_last_n = n;
    g_closed++;
    g_s1 += (long double)d;
    g_s2 += (long double)d * (long double)d;
    if (g_dense) {   /* the dense phase (header) */
      if (caught && !g_dense_until) g_dense_until = now + DENSE_AFTER_NS;
      if ((g_dense_until && now >= g_dense_until) || events >= DENSE_EVENTS) {
        g_dense = 0;
        g_first = (stratum){now - g_t_start, g_windows, g_window_ns, sum, n, g_closed, g_s1, g_s2};
      }
    }
  }
  pthread_mutex_unlock(&g_mu);
}

static int dense_now(void) {
  pthread_mutex_lock(&g_mu);
  const int d = g_dense;
  pthread_mutex_unlock(&g_mu);
  return d;
}

static void *window_main(void *arg) {
  (void)arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);   /* handlers run on application threads */
  prctl(PR_SET_NAME, "collprof-cost", 0, 0, 0);
  uint64_t rng = cp_mix64(cp_mono_ns() ^ (uint64_t)getpid() << 32);
  const uint64_t mean_gap = g_every_ns > g_window_len_ns ? g_every_ns - g_window_len_ns : 0;
  const uint64_t dense_gap = g_every_ns / DENSE_DIV - g_window_len_ns;   /* start_once: > 0 if dense */
  for (;;) {
    rng = cp_mix64(rng + 0x9e3779b97f4a7c15ull);
    const uint64_t mean = dense_now() ? dense_gap : mean_gap;
    const uint64_t gap = mean ? rng % (2 * mean + 1) : 0;
    if (!nap_until(cp_mono_ns() + gap)) break;
    window_open(cp_clock_now());
    const int go_on = nap_until(cp_mono_ns() + g_window_len_ns);
    window_close();
    if (!go_on) break;
  }
  return NULL;
}

/* The timing's own cost: the least mean of a few rounds of two clock
 * reads back to back, what a wrapper around nothing would measure. */
static uint64_t calibrate(void) {
  uint64_t best = UINT64_MAX;
  for (int round = 0; round < 5; round++) {
    uint64_t sum = 0;
    for (int i = 0; i < 256; i++) {
      const uint64_t a = cp_clock_now(), b = cp_clock_now();
      sum += b - a;
    }
    if (sum / 256 < best) best = sum / 256;
  }
  return best;
}

/* What a wrapper adds to the time of a callback, in ps: a loop of calls to
 * an empty function through the wrapper's two halves (into a block of
 * our own), against the same loop without them; the least of a few
 * rounds.  A window's time less its callbacks' share of this is the time
 * the application would have had without the timing (cp_cost_read). */
static __attribute__((noinline)) void empty_callback(void) { __asm__ volatile(""); }
static cp_thr g_probe_thr;
static uint64_t calibrate_wrapper(void) {
  enum { N = 512 };
  uint64_t best = UINT64_MAX;
  cp_thr *const saved = cp_tls_thr;
  cp_tls_thr = &g_probe_thr;
  for (int round = 0; round < 5; round++) {
    const uint64_t a = cp_clock_now();
    for (int i = 0; i < N; i++) empty_callback();
    const uint64_t b = cp_clock_now();
    for (int i = 0; i < N; i++) {
      const uint64_t o0 = cp_oneoff_mine();
      const uint64_t t0 = cp_cost_begin();
      empty_callback();
      cp_cost_end(t0, o0);
    }
    const uint64_t c = cp_clock_now();
    const uint64_t plain = b - a, timed = c - b;
    const uint64_t extra = timed > plain ? (timed - plain) * 1000 / N : 0;
    if (extra < best) best = extra;
  }
  cp_tls_thr = saved;
  return best;
}

static void start_once(void) {
  const cp_config *c = cp_config_get();
  if (c->cost_sample_ms == 0) return;
  g_every_ns = (uint64_t)c->cost_sample_ms * 1000000ull;
  g_window_len_ns = (uint64_t)c->cost_window_us * 1000ull;
  g_floor_ns = calibrate();
  g_wrap_ps = calibrate_wrapper();
  g_t_start = cp_clock_now();
  if (g_window_len_ns >= g_every_ns) {   /* always: one window, the whole run */
    g_always = 1;
    window_open(g_t_start);
    return;
  }
  /* the dense phase (header), where its windows stay apart by one of theirs */
  g_dense = g_every_ns / DENSE_DIV >= 2 * g_window_len_ns;
  if (pthread_create(&g_thread, NULL, window_main, NULL) == 0) atomic_store(&g_running, 1);
  else cp_warn("cannot start the cost-sampling thread; the summary's overhead is the start-up estimate");
}

HIDDEN void cp_cost_start(void) { pthread_once(&g_once, start_once); }

HIDDEN void cp_cost_shutdown(void) {
  if (atomic_exchange(&g_running, 0)) {
    atomic_store(&g_stop, 1);
    pthread_join(g_thread, NULL);   /* within one NAP_SLICE_NS */
  }
  window_close();
  pthread_mutex_lock(&g_mu);
  if (g_t_start && !g_t_end) g_t_end = cp_clock_now();   /* the span ends with the sampling */
  pthread_mutex_unlock(&g_mu);
}

HIDDEN void cp_cost_after_fork(void) {
  /* The thread is the parent's; the mutex may have been held by it. */
  atomic_store(&g_running, 0);
  g_closed = 0;
  g_s1 = g_s2 = 0;
  g_dense = 0;
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  g_mu = fresh;
  cp_plugin_timed(0);
  g_open_since = 0;
}

HIDDEN void cp_cost_end(uint64_t t0, uint64_t oneoff0) {
  const uint64_t t1 = cp_clock_now();
  cp_thr *t = cp_tls_thr;
  if (__builtin_expect(t == NULL, 0)) return;   /* a callback that made no block (a bad one) */
  const uint64_t skip = g_floor_ns + (cp_oneoff_mine() - oneoff0);   /* set-ups: counted whole */
  const uint64_t d = t1 > t0 + skip ? t1 - t0 - skip : 0;
  cp_inc(&t->cost_n, 1);
  cp_inc(&t->cost_ns, d);
}

/* Square root by Newton's steps, falling from above: the plugin links no
 * libm (its only dependencies are libc and xxHash). */
static long double root(long double x) {
  if (!(x > 0)) return 0;
  long double r = x > 1 ? x : 1;
  for (int i = 0; i < 200; i++) {
    const long double n = 0.5L * (r + x / r);
    if (n >= r) break;
    r = n;
  }
  return r;
}

HIDDEN uint64_t cp_cost_scale(uint64_t timed_ns, uint64_t span_ns, uint64_t window_ns) {
  if (window_ns == 0) return 0;
  if (span_ns <= window_ns) return timed_ns;
  const long double v = (long double)timed_ns * (long double)span_ns / (long double)window_ns;
  return v >= 1.8e19L ? UINT64_MAX : (uint64_t)(v + 0.5L);
}

/* One stratum's estimate and its variance (header): its callbacks' time
 * x (span - slow) / (window - slow), where slow is what the timing took
 * of it (calibrate_wrapper); the variance from its windows' spread, n x
 * their variance x the scale squared (-1: fewer than 2 windows). */
static uint64_t stratum_est(const stratum *k, uint64_t *slow_out, long double *var_out) {
  uint64_t slow = (uint64_t)((long double)k->callbacks * (long double)g_wrap_ps / 1000.0L);
  if (slow >= k->window_ns || slow >= k->span_ns) slow = 0;
  *slow_out = slow;
  *var_out = -1;
  if (k->window_ns <= slow) return 0;
  if (k->closed >= 2) {
    const long double n = (long double)k->closed, mean = k->s1 / n;
    long double var = (k->s2 - n * mean * mean) / (n - 1);
    if (var < 0) var = 0;
    const long double sc = (long double)(k->span_ns - slow) / (long double)(k->window_ns - slow);
    *var_out = n * var * sc * sc;
  }
  return cp_cost_scale(k->timed_ns, k->span_ns - slow, k->window_ns - slow);
}

static uint64_t sub0(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }

HIDDEN void cp_cost_read(cp_cost_stats *out) {
  memset(out, 0, sizeof *out);
  for (cp_thr *t = cp_thr_all(); t; t = t->next) {
    out->callbacks += cp_ld(&t->cost_n);
    out->timed_ns += cp_ld(&t->cost_ns);
  }
  pthread_mutex_lock(&g_mu);
  const uint64_t now = g_t_end ? g_t_end : cp_clock_now();
  out->windows = g_windows;
  out->window_ns = g_window_ns + (g_open_since && now > g_open_since ? now - g_open_since : 0);
  out->span_ns = g_t_start && now > g_t_start ? now - g_t_start : 0;
  const int always = g_always;
  const stratum first = g_first;
  stratum all = {0, g_windows, 0, 0, 0, g_closed, g_s1, g_s2};
  pthread_mutex_unlock(&g_mu);
  if (out->span_ns < out->window_ns) out->span_ns = out->window_ns;
  /* the set-ups (oneoff.h), timed whole: added unscaled below */
  out->setup_ns = atomic_load_explicit(&cp_oneoff_total_ns, memory_order_relaxed);
  if (always) {   /* a window over the whole run needs no scaling at all */
    out->est_ns = out->timed_ns + out->setup_ns;
    out->err_known = 1;
    return;
  }
  all.span_ns = out->span_ns; all.window_ns = out->window_ns;
  all.timed_ns = out->timed_ns; all.callbacks = out->callbacks;
  /* Inside a window every callback ran slower by the timing itself, so
   * the application made fewer of them there than elsewhere: the window
   * (and the run) stand for the time they would have taken without it,
   * less that slowdown (calibrate_wrapper).  Two strata once the dense
   * phase has ended and the later one has two windows (header). */
  const stratum rest = {sub0(all.span_ns, first.span_ns), sub0(all.windows, first.windows),
                        sub0(all.window_ns, first.window_ns), sub0(all.timed_ns, first.timed_ns),
                        sub0(all.callbacks, first.callbacks), sub0(all.closed, first.closed),
                        all.s1 - first.s1, all.s2 - first.s2};
  uint64_t slow1, slow2;
  long double var1, var2;
  if (first.span_ns && rest.closed >= 2 && rest.span_ns > rest.window_ns) {
    out->dense = first;
    out->dense_est_ns = stratum_est(&first, &out->dense_slow_ns, &var1);
    const uint64_t e2 = stratum_est(&rest, &slow2, &var2);
    out->est_ns = out->dense_est_ns + e2 + out->setup_ns;
    out->slow_ns = out->dense_slow_ns + slow2;
    out->err_known = var1 >= 0 && var2 >= 0;
    if (out->err_known) {
      const long double e = root(var1 + var2);
      out->err_ns = e >= 1.8e19L ? UINT64_MAX : (uint64_t)(e + 0.5L);
    }
    return;
  }
  out->est_ns = stratum_est(&all, &slow1, &var1);
  if (out->windows) out->est_ns += out->setup_ns;   /* no window: no estimate (0) */
  out->slow_ns = slow1;
  out->err_known = var1 >= 0;
  if (out->err_known) {
    const long double e = root(var1);
    out->err_ns = e >= 1.8e19L ? UINT64_MAX : (uint64_t)(e + 0.5L);
  }
}
