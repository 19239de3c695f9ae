/*
 * profiling_windows.c — when profiling is on: the periods' timer thread,
 * the application's pause, and the windows the summary lists.
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
 */
#include "mask_state.h"
#include "config.h"
#include "hot.h"
#include "nap.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#pragma GCC visibility push(hidden)

#define WIN_CAP 64                    /* windows remembered for the summary */

/* periods (cp_mk.have_periods: there are) */
static double g_delay, g_duration;
static long g_repeat;                 /* windows; 0 = for ever */
static pthread_t g_timer;
static atomic_int g_timer_running;
static pthread_mutex_t g_shut_lock = PTHREAD_MUTEX_INITIALIZER;
/* The windows for the summary (cp_mask_window_edge), under g_win_lock. */
static pthread_mutex_t g_win_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_win_start[WIN_CAP], g_win_end[WIN_CAP]; /* ns after cp_mk.t0 */
static long g_nwin;                   /* windows opened so far */
static int g_win_open;                /* the latest window has not ended */
static pthread_mutex_t g_text_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_text[CP_WINDOWS_TEXT];

/* At a window's end (cp_mk.in_window or cp_mk.paused already say off): the mask
 * goes to the mask off now if KernelCh is off in it (dropping other bits
 * mid-group is harmless: only KernelCh posts proxy work), else at the next
 * group stop, which publishes the mask in effect then (mask_control.c). */
static void close_window(void) {
  int *p = atomic_load_explicit(&cp_mk.ptr, memory_order_relaxed);
  if (!p || atomic_load(&cp_mk.frozen_kc)) return;
  int cur = __atomic_load_n(p, __ATOMIC_SEQ_CST);
  if (!(cur & (int)KC))
    __atomic_compare_exchange_n(p, &cur, (int)cp_mk.watch, 0, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED);
}

/* A window opens (timer or resume; cp_mk.in_window and cp_mk.paused
 * already say on): the first call after it is a first-call sample, and KernelCh waits
 * for a group stop, since a group may be open now. */
static void open_window(void) {
  atomic_store(&cp_mk.next_lean, 0);
  atomic_store(&cp_mk.next_first, cp_mk.n >= 2);
  atomic_store(&cp_mk.next_kc, cp_mk.n >= 1);
  atomic_store(&cp_mk.kc_wait, 1);
}

void cp_mask_window_edge(uint64_t t) {
  pthread_mutex_lock(&g_win_lock);
  int on = cp_mask_profiling_on();
  if (atomic_load_explicit(&cp_hot.off, memory_order_relaxed) != !on) {
    atomic_store_explicit(&cp_hot.off, !on, memory_order_relaxed);
    atomic_fetch_add_explicit(&cp_hot.off_epoch, 1, memory_order_relaxed);
  }
  if (atomic_load(&cp_mk.inited) && on != g_win_open) {
    uint64_t at = t > cp_mk.t0 ? t - cp_mk.t0 : 0;
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

int cp_mask_periods_parse(const char *s) {
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
 * absolute from cp_mk.t0, so windows do not drift. */
static void *timer_main(void *arg) {
  (void)arg;
  uint64_t d = (uint64_t)(g_delay * 1e9), u = (uint64_t)(g_duration * 1e9);
  uint64_t t = cp_mk.t0;
  for (long i = 0; g_repeat == 0 || i < g_repeat; i++) {
    t += d;
    if (!sleep_until(t)) return NULL;
    open_window();                        /* first group after the open sampled */
    atomic_store(&cp_mk.in_window, 1);
    cp_mask_window_edge(t);
    cp_mask_publish();
    t += u;
    int go_on = sleep_until(t);
    if (!go_on) return NULL;              /* shutdown closes the window text */
    atomic_store(&cp_mk.in_window, 0);
    cp_mask_window_edge(t);
    close_window();
  }
  return NULL;
}

void cp_mask_periods_start(void) {
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, 64 * 1024);
  if (pthread_create(&g_timer, &a, timer_main, NULL) == 0) {
    atomic_store(&g_timer_running, 1);
  } else {
    cp_warn("cannot start the COLLPROF_PERIODS timer; profiling all the time");
    cp_mk.have_periods = 0;
    atomic_store(&cp_mk.in_window, 1);
    cp_mask_window_edge(cp_mono_ns());
  }
  pthread_attr_destroy(&a);
}

/* "0.050-0.100 0.150-0.200" in seconds after the first init; an open window
 * ends in "-open".  Not on a hot path (summary only). */
const char *cp_mask_windows(void) {
  pthread_mutex_lock(&g_text_lock);
  g_text[0] = '\0';
  pthread_mutex_lock(&g_win_lock);
  if (atomic_load(&cp_mk.win_used)) {
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

void cp_mask_shutdown(void) {
  pthread_mutex_lock(&g_shut_lock);
  if (atomic_exchange(&g_timer_running, 0)) {
    atomic_store(&g_stop, 1);
    pthread_join(g_timer, NULL);          /* within one SLICE_NS */
  }
  /* An open window is closed now for the summary (the mask stays). */
  pthread_mutex_lock(&g_win_lock);
  if (atomic_load(&cp_mk.win_used) && g_win_open) {
    if (g_nwin > 0 && g_nwin - 1 < WIN_CAP) g_win_end[g_nwin - 1] = cp_mono_ns() - cp_mk.t0;
    g_win_open = 0;
  }
  pthread_mutex_unlock(&g_win_lock);
  pthread_mutex_unlock(&g_shut_lock);
}

/* collprof_pause / collprof_resume (pause.c).  Before the first init only
 * the flag is set; cp_mask_init starts from it. */
int cp_mask_set_paused(int paused) {
  pthread_mutex_lock(&g_shut_lock);   /* one pause or resume at a time */
  int was = atomic_load(&cp_mk.paused);
  if (was == paused) { pthread_mutex_unlock(&g_shut_lock); return was; }
  atomic_store(&cp_mk.win_used, 1);
  if (!paused && atomic_load(&cp_mk.in_window)) open_window();
  atomic_store(&cp_mk.paused, paused);
  cp_mask_window_edge(cp_mono_ns());
  if (atomic_load(&cp_mk.inited)) {
    if (paused) close_window();
    else cp_mask_publish();
  }
  pthread_mutex_unlock(&g_shut_lock);
  return was;
}

int cp_mask_paused(void) { return atomic_load(&cp_mk.paused); }

#pragma GCC visibility pop
