/*
 * phase_timing.c — the per-thread sums of the diagnostic phase-timing
 * build and the lines it prints at exit (phase_timing.h says why and how).
 * Empty unless built with -DCP_PHASE_TIMING.
 */
#include "phase_timing.h"
#ifdef CP_PHASE_TIMING
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)

enum { PH_THREADS = 256 };
typedef struct { int tid; uint64_t ticks[CP_PH_N], n[CP_PH_N]; } ph_thr;
static ph_thr g_ph[PH_THREADS];
static atomic_int g_nph;
static __thread ph_thr *t_ph;
__thread uint64_t cp_ph_last;
static uint64_t g_tsc0, g_ns0;

static uint64_t mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t g_floor;   /* ticks one part reads when it does nothing: the fences and the clock */

__attribute__((constructor)) static void ph_init(void) {
  g_ns0 = mono();
  g_tsc0 = __rdtsc();
  for (int i = 0; i < 1000; i++) {   /* an empty part, as the callbacks time theirs */
    CP_PH_BEGIN();
    CP_PH(CP_PH_CAL, 1);
  }
  g_floor = t_ph->ticks[CP_PH_CAL] / t_ph->n[CP_PH_CAL];
  t_ph->ticks[CP_PH_CAL] = t_ph->n[CP_PH_CAL] = 0;
}

void cp_ph_add(int i, int n) {
  _mm_lfence();
  const uint64_t x = __rdtsc();
  if (!t_ph) {
    const int k = atomic_fetch_add(&g_nph, 1);
    t_ph = &g_ph[k < PH_THREADS ? k : PH_THREADS - 1];
    t_ph->tid = (int)syscall(SYS_gettid);
  }
  t_ph->ticks[i] += x - cp_ph_last;
  t_ph->n[i] += (uint64_t)n;
  _mm_lfence();
  cp_ph_last = __rdtsc();   /* the bookkeeping above is no part's */
}

void cp_ph_reset(void) {
  if (!t_ph) return;
  for (int i = 0; i < CP_PH_N; i++) t_ph->ticks[i] = t_ph->n[i] = 0;
}

static const char *const ph_name[CP_PH_N] = {
    "entry", "descr", "path", "clock", "enter", "slot", "trace", "leave", "hooks",
    "entry", "clock", "enter", "parent", "trace", "release", "profile", "hooks",
    "entry", "count", "trace", "calibration"};

__attribute__((destructor)) static void ph_print(void) {
  const uint64_t dns = mono() - g_ns0, dt = __rdtsc() - g_tsc0;
  const double tpn = dns ? (double)dt / (double)dns : 1.0;
  const int n = atomic_load(&g_nph) < PH_THREADS ? atomic_load(&g_nph) : PH_THREADS;
  static const int first[3] = {CP_PH_S_ENTRY, CP_PH_T_ENTRY, CP_PH_U_ENTRY};
  static const int last[3] = {CP_PH_S_HOOKS, CP_PH_T_HOOKS, CP_PH_U_TRACE};
  static const char *const kind[3] = {"start", "stop", "state"};
  for (int k = 0; k < n; k++) {
    const ph_thr *p = &g_ph[k];
    uint64_t calls = 0;
    for (int c = 0; c < 3; c++) calls += p->n[first[c]];
    if (calls < 1000) continue;
    char line[1024];
    int o = snprintf(line, sizeof line, "collprof-phases: pid %d tid %d: floor %.1f ns per part;", (int)getpid(),
                     p->tid, (double)g_floor / tpn);
    for (int c = 0; c < 3 && o < (int)sizeof line - 80; c++) {
      const uint64_t m = p->n[first[c]];
      if (!m) continue;
      double sum = 0;
      o += snprintf(line + o, sizeof line - (size_t)o, "%s %s %llu:", c ? " |" : "", kind[c], (unsigned long long)m);
      for (int i = first[c]; i <= last[c] && o < (int)sizeof line - 40; i++) {
        const double v = (double)p->ticks[i] / tpn / (double)m;
        sum += v;
        o += snprintf(line + o, sizeof line - (size_t)o, " %s %.1f", ph_name[i], v);
      }
      o += snprintf(line + o, sizeof line - (size_t)o, " = %.1f (%.1f over the floor)", sum,
                    sum - (double)g_floor / tpn * (last[c] - first[c] + 1));
    }
    fprintf(stderr, "%s\n", line);
  }
}
#endif
