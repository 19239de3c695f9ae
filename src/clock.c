/*
 * clock.c — TSC-based CLOCK_MONOTONIC (see clock.h for the why).
 *
 * A mapping (tsc0, ns0, mult, lim) is published as a pointer to one of a
 * ring of 16 blocks; a re-anchor fills the next block and swaps the pointer,
 * so a reader never sees a half-written mapping (a block is rewritten only
 * 16 re-anchors later, seconds after any reader let go of it).  Fields are
 * accessed with relaxed atomics (ThreadSanitizer-clean).  The one thread
 * that wins the re-anchor flag writes; everybody else only reads.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __x86_64__
#include <cpuid.h>
#endif
#pragma GCC visibility push(hidden)
#include "clock.h"
#include "config.h"

__extension__ typedef unsigned __int128 cp_u128;

/* No reading fits: the slow path.  cp_clock_cur (hot.c) starts here. */
cp_clock_map cp_clock_none = {UINT64_MAX, 0, 0, 0};
static cp_clock_map ring[16];
static unsigned ring_next;
static atomic_flag busy = ATOMIC_FLAG_INIT;
static uint64_t tsc_load, ns_load, interval_ns;
static int use_tsc;
static int64_t skew;
static uint64_t start_mono;
static int64_t start_wall;
static pthread_once_t clk_once = PTHREAD_ONCE_INIT;
static _Atomic int clk_ready;

static uint64_t mono_raw(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#ifdef CP_CLOCK_TSC
static int tsc_invariant(void) {
#ifdef __x86_64__
  unsigned a, b, c, d;
  if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u &&
      __get_cpuid(0x80000007u, &a, &b, &c, &d) && (d & (1u << 8)))
    return 1;
#endif
  /* Virtual machines often hide the bit while the kernel trusts the TSC. */
  FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (!f) return 0;
  char buf[32] = {0};
  int ok = fgets(buf, sizeof buf, f) && strncmp(buf, "tsc", 3) == 0;
  fclose(f);
  return ok;
}

/* One (tsc, ns) pair, the tightest of a few brackets. */
static void sample_pair(uint64_t *tsc, uint64_t *ns) {
  uint64_t best = UINT64_MAX;
  for (int i = 0; i < 7; i++) {
    uint64_t t1 = __rdtsc(), n = mono_raw(), t2 = __rdtsc();
    if (t2 - t1 < best) { best = t2 - t1; *tsc = t1 + (t2 - t1) / 2; *ns = n; }
  }
}

/* Fill the next ring block and make it current; busy flag held. */
static void publish(uint64_t tsc0, uint64_t ns0, uint64_t mult) {
  cp_clock_map *m = &ring[ring_next++ % 16];
  __atomic_store_n(&m->tsc0, tsc0, __ATOMIC_RELAXED);
  __atomic_store_n(&m->ns0, ns0 + (uint64_t)skew, __ATOMIC_RELAXED);
  __atomic_store_n(&m->mult, mult, __ATOMIC_RELAXED);
  __atomic_store_n(&m->lim, (uint64_t)(((cp_u128)interval_ns << 32) / (mult ? mult : 1)), __ATOMIC_RELAXED);
  atomic_store_explicit(&cp_clock_cur, m, memory_order_release);
}
#endif

static int64_t parse_skew(void) {
  const char *s = getenv("COLLPROF_TEST_CLOCK_SKEW_NS");
  if (!s || !*s) return 0;
  long idx = 0;
  if (strchr(s, ',')) {
    const char *r = getenv("OMPI_COMM_WORLD_RANK");
    if (!r) r = getenv("PMIX_RANK");
    idx = r ? strtol(r, NULL, 10) : 0;
    if (idx < 0) idx = 0;
  }
  const char *p = s;
  for (long i = 0; i < idx && p; i++) { p = strchr(p, ','); if (p) p++; }
  if (!p) return 0;                       /* fewer entries than ranks: no skew */
  char *end;
  long long v = strtoll(p, &end, 10);
  if (end == p || (*end && *end != ',')) {
    cp_warn("COLLPROF_TEST_CLOCK_SKEW_NS=\"%s\" is not a number list; ignored", s);
    return 0;
  }
  return (int64_t)v;
}

static void clk_init_once(void) {
  skew = parse_skew();
  struct timespec w;
  clock_gettime(CLOCK_REALTIME, &w);
  uint64_t m = mono_raw();
  start_wall = (int64_t)w.tv_sec * 1000000000ll + w.tv_nsec;
#ifdef CP_CLOCK_TSC
  if (!getenv("COLLPROF_NO_TSC") && tsc_invariant()) {
    uint64_t t0, n0, t1, n1;
    sample_pair(&t0, &n0);
    do { sample_pair(&t1, &n1); } while (n1 - n0 < 200000 && n1 >= n0);  /* 200 us */
    if (t1 > t0 && n1 > n0) {
      tsc_load = t0;
      ns_load = n0;
      interval_ns = 2000000;      /* re-anchor after 2 ms, then x4 up to 1 s */
      use_tsc = 1;
      m = n0;
      publish(t1, n1, (uint64_t)(((cp_u128)(n1 - n0) << 32) / (t1 - t0)));
    }
  }
#endif
  start_mono = m + (uint64_t)skew;
  atomic_store_explicit(&clk_ready, 1, memory_order_release);
}

__attribute__((constructor)) static void clk_ctor(void) { cp_clock_init(); }

void cp_clock_init(void) {
  if (!atomic_load_explicit(&clk_ready, memory_order_acquire)) pthread_once(&clk_once, clk_init_once);
}

#ifdef CP_CLOCK_TSC
/* Move the anchor to now, the rate measured from the load anchor. */
static void reanchor(void) {
  if (atomic_flag_test_and_set_explicit(&busy, memory_order_acquire)) return;
  uint64_t t, n;
  sample_pair(&t, &n);
  const cp_clock_map *cur = atomic_load_explicit(&cp_clock_cur, memory_order_acquire);
  if (t > tsc_load && n > ns_load && t > __atomic_load_n(&cur->tsc0, __ATOMIC_RELAXED)) {
    if (interval_ns < 1000000000ull) interval_ns *= 4;
    if (interval_ns > 1000000000ull) interval_ns = 1000000000ull;
    publish(t, n, (uint64_t)(((cp_u128)(n - ns_load) << 32) / (t - tsc_load)));
  }
  atomic_flag_clear_explicit(&busy, memory_order_release);
}
#endif

uint64_t cp_clock_now_slow(void) {
  cp_clock_init();
#ifdef CP_CLOCK_TSC
  if (use_tsc) {
    uint64_t t = __rdtsc();
    const cp_clock_map *m = atomic_load_explicit(&cp_clock_cur, memory_order_acquire);
    uint64_t tsc0 = __atomic_load_n(&m->tsc0, __ATOMIC_RELAXED);
    if (t >= tsc0 && t - tsc0 > __atomic_load_n(&m->lim, __ATOMIC_RELAXED)) {
      reanchor();
      m = atomic_load_explicit(&cp_clock_cur, memory_order_acquire);
      tsc0 = __atomic_load_n(&m->tsc0, __ATOMIC_RELAXED);
    }
    uint64_t ns0 = __atomic_load_n(&m->ns0, __ATOMIC_RELAXED), mult = __atomic_load_n(&m->mult, __ATOMIC_RELAXED);
    return t >= tsc0 ? ns0 + (uint64_t)(((cp_u128)(t - tsc0) * mult) >> 32)     /* ns0 has the skew */
                     : ns0 - (uint64_t)(((cp_u128)(tsc0 - t) * mult) >> 32);
  }
#endif
  return mono_raw() + (uint64_t)skew;
}

uint64_t cp_clock_start_mono(void) { cp_clock_init(); return start_mono; }
int64_t cp_clock_start_wall(void) { cp_clock_init(); return start_wall; }
int64_t cp_clock_skew(void) { cp_clock_init(); return skew; }
int cp_clock_uses_tsc(void) { cp_clock_init(); return use_tsc; }
