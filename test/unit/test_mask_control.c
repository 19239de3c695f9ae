/*
 * test_mask_control.c — TAP unit test of src/mask_control.c and the rules
 * beside it (gpu_sample_rule.c, sample_in_flight.c, start_delay.c,
 * profiling_windows.c): GPU sampling of
 * KernelCh through NCCL's live activation mask, new-path forcing, and the
 * COLLPROF_PERIODS timer, and the application's pause (collprof_pause).
 *
 * It plays NCCL: one int is the activation mask, each simulated API call
 * reads it (sampled = KernelCh bit), a sampled call marks its path as having
 * a GPU sample (what paths.c does when the KernelCh arrives), then calls the
 * hook.  The expected sampled calls come from an oracle written here from
 * the rule as documented, not from the module's code.  mask_control keeps
 * process-wide state, so every scenario runs in a forked child that reports
 * "1 name" / "0 name" lines through a pipe; the parent prints TAP.
 *
 * cp_config_get, cp_warn, cp_info and cp_path_gpu_seen are defined here:
 * the test controls the configuration and the "seen" answer, and since they
 * are defined, the archive's config.o / paths.o are never pulled in.
 */
#include "mask_control.h"
#include "config.h"
#include "hot.h"
#include "tls.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KC 64
#define DEFAULT_MASK (4095 & ~KC)
#define GROUPAPI 256
/* The mask while recording is off (paused, outside a window) with GPU
 * sampling on: GroupApi alone, so that a graph capture or a second thread
 * is still seen (mask_control.c, "Off"). */
#define OFF GROUPAPI

/* ---- stubs ---- */
static cp_config g_cfg;
static int g_warnings;
static unsigned char g_seen[1 << 17];
const cp_config *cp_config_get(void) { return &g_cfg; }
void cp_config_reload(void) {}
void cp_warn(const char *fmt, ...) { (void)fmt; g_warnings++; }
void cp_info(const char *fmt, ...) { (void)fmt; }
int cp_path_gpu_seen(uint32_t path) { return path < sizeof g_seen ? g_seen[path] : 0; }
/* the kernel's thread id, as start_common.h passes it to cp_mask_on_group_start */
static int my_tid(void) { return (int)syscall(SYS_gettid); }


/* ---- child → parent reporting ---- */
static FILE *g_out;
static void check(int cond, const char *fmt, ...) {
  char name[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(name, sizeof name, fmt, ap);
  va_end(ap);
  fprintf(g_out, "%d %s\n", cond ? 1 : 0, name);
  fflush(g_out);
}

static void config(uint32_t mask, int n, const char *periods) {
  memset(&g_cfg, 0, sizeof g_cfg);
  g_cfg.event_mask = mask;
  g_cfg.gpu_sample = n;
  snprintf(g_cfg.periods, sizeof g_cfg.periods, "%s", periods);
  g_cfg.trace_on = 1;
}

/* ---- the oracle: the documented rule, written independently ---- */
static uint64_t o_mix(uint64_t b) {
  uint64_t z = b * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int o_periodic(uint64_t k, int n) {
  if (n <= 0) return 0;
  if (n == 1) return 1;
  uint64_t blk = k / (uint64_t)n;
  uint64_t pos = blk ? o_mix(blk) % (uint64_t)n : 0;
  return k % (uint64_t)n == pos;
}
/* log2 size class: 0 for 0 bytes, else the bit length, at most 41 */
static unsigned o_class(uint64_t by) {
  unsigned c = 0;
  while (by) { c++; by >>= 1; }
  return c > 41 ? 41 : c;
}
static int o_cls_forcing = 1;   /* 0: the rule before class forcing (for comparison) */
/* sampled[k] for the call sequence `paths` (call k of bytes[k]; bytes NULL:
 * 0 each); a sampled call's path becomes seen iff arrives(path).  Class
 * forcing: the second call of a (path < 4096, size class) whose calls so
 * far were not sampled, and whose next call is not (periodic or the path's
 * forced one), has the next call sampled, within the forcing budget.  Small
 * calls (0 < bytes < b, with m > 1): the periodic decision taken at a call
 * is numbered within its stream (small calls', or the others'), from 1,
 * and is periodic in blocks of m x n or n.  Returns the number of sampled
 * calls. */
static uint64_t oracle(const uint32_t *paths, const uint64_t *bytes, size_t ncalls, int n, int m, uint64_t b,
                       int (*arrives)(uint32_t), unsigned char *sampled) {
  static unsigned char seen[1 << 17], forced[1 << 17];
  static uint64_t cls[4096], once[4096];
  memset(seen, 0, sizeof seen);
  memset(forced, 0, sizeof forced);
  memset(cls, 0, sizeof cls);
  memset(once, 0, sizeof once);
  uint64_t count = 0, nforced = 0, stream[2] = {0, 0};
  int s = n >= 1;
  for (size_t k = 0; k < ncalls; k++) {
    uint32_t p = paths[k];
    sampled[k] = (unsigned char)s;
    count += (uint64_t)s;
    if (s && arrives(p)) seen[p] = 1;
    int next;
    if (m > 1) {
      const uint64_t by = bytes ? bytes[k] : 0;
      const int small = by > 0 && by < b;
      next = o_periodic(++stream[small], small ? n * m : n);
    } else {
      next = o_periodic(k + 1, n);
    }
    const unsigned c = o_class(bytes ? bytes[k] : 0);
    if (n >= 2 && !next && !s && !seen[p] && !forced[p] && p < 65536 &&
        (nforced < 64 || nforced * (uint64_t)n < k + 1)) {
      forced[p] = 1;
      nforced++;
      next = 1;
      if (p < 4096) cls[p] |= 1ull << c;
    }
    if (n >= 2 && o_cls_forcing && p < 4096 && !(cls[p] >> c & 1)) {
      if (!(once[p] >> c & 1)) {            /* the class's first call: noted */
        once[p] |= 1ull << c;
        if (s) cls[p] |= 1ull << c;
      } else {                              /* its second: forces the next */
        cls[p] |= 1ull << c;
        if (!s && !next && (nforced < 64 || nforced * (uint64_t)n < k + 1)) {
          nforced++;
          next = 1;
        }
      }
    }
    s = next;
  }
  return count;
}

/* ---- driving the module as NCCL would ---- */
static int g_mask;
/* NCCL's read of the mask; the period timer writes it from its thread. */
#define MASK() __atomic_load_n(&g_mask, __ATOMIC_RELAXED)
static uint64_t drive_sized(const uint32_t *paths, const uint64_t *bytes, size_t ncalls,
                            int (*arrives)(uint32_t), unsigned char *sampled) {
  uint64_t count = 0;
  for (size_t k = 0; k < ncalls; k++) {
    int s = (__atomic_load_n(&g_mask, __ATOMIC_RELAXED) & KC) != 0; /* NCCL reads */
    sampled[k] = (unsigned char)s;
    count += (uint64_t)s;
    if (s && arrives(paths[k])) g_seen[paths[k]] = 1;               /* KernelCh came */
    cp_mask_on_group_start(1);                                      /* ungrouped call: */
    cp_mask_on_api_call(paths[k], s, bytes ? bytes[k] : 0);         /* a group of one */
    cp_mask_on_group_stop(0);
  }
  return count;
}
static uint64_t drive(const uint32_t *paths, size_t ncalls, int (*arrives)(uint32_t), unsigned char *sampled) {
  return drive_sized(paths, NULL, ncalls, arrives, sampled);
}
static int always(uint32_t p) { (void)p; return 1; }
static int never(uint32_t p) { (void)p; return 0; }

/* Compare module and oracle on one sequence (the module configured with
 * small calls m, b as the oracle is told). */
static void compare_sized(const char *what, const uint32_t *paths, const uint64_t *bytes, size_t ncalls, int n,
                          int m, uint64_t b, int (*arrives)(uint32_t)) {
  unsigned char *got = calloc(ncalls, 1), *want = calloc(ncalls, 1);
  uint64_t cg = drive_sized(paths, bytes, ncalls, arrives, got);
  uint64_t cw = oracle(paths, bytes, ncalls, n, m, b, arrives, want);
  size_t first_diff = ncalls;
  for (size_t k = 0; k < ncalls; k++)
    if (got[k] != want[k]) { first_diff = k; break; }
  check(cg == cw, "%s N=%d: %llu sampled calls, rule says %llu", what, n,
        (unsigned long long)cg, (unsigned long long)cw);
  check(first_diff == ncalls, "%s N=%d: same calls sampled (first difference at %zu)",
        what, n, first_diff);
  check(cp_mask_sampled_calls() == cg, "%s N=%d: cp_mask_sampled_calls() = %llu", what, n,
        (unsigned long long)cp_mask_sampled_calls());
  free(got);
  free(want);
}
static void compare(const char *what, const uint32_t *paths, size_t ncalls, int n, int (*arrives)(uint32_t)) {
  compare_sized(what, paths, NULL, ncalls, n, 1, 0, arrives);
}

/* ---- scenarios (each in its own process) ---- */
enum { CALLS = 10000 };
static uint32_t g_paths[CALLS];

static void sc_one_path(int n) {
  config(DEFAULT_MASK, n, "");
  uint32_t v = cp_mask_attach(&g_mask);
  check(v == (uint32_t)MASK(), "N=%d: attach returns the mask it wrote", n);
  check((v & ~(uint32_t)KC) == DEFAULT_MASK, "N=%d: base mask kept (0x%x)", n, v);
  check(((v & KC) != 0) == (n >= 1), "N=%d: first call %s KernelCh", n,
        n >= 1 ? "has" : "has no");
  for (size_t k = 0; k < CALLS; k++) g_paths[k] = 3;
  compare("one path", g_paths, CALLS, n, always);
  uint64_t c = cp_mask_sampled_calls();
  if (n == 0) check(c == 0, "N=0: no call sampled (%llu)", (unsigned long long)c);
  else if (n == 1) check(c == CALLS, "N=1: every call sampled (%llu)", (unsigned long long)c);
  else
    check(c >= (uint64_t)(CALLS / n) && c <= (uint64_t)((CALLS + n - 1) / n),
          "N=%d: %llu sampled calls = one per block of %d", n, (unsigned long long)c, n);
}

/* The decision carries its block from call to call (periodic_stream); a
 * thread's call counter that jumps (reset after a fork, the block all
 * threads share) must be placed afresh: every decision after the jump is
 * still the rule's for the new number. */
static void sc_renumbered(int n) {
  config(DEFAULT_MASK, n, "");
  cp_mask_attach(&g_mask);
  for (size_t k = 0; k < CALLS; k++) g_paths[k] = 3;
  unsigned char *got = calloc(CALLS, 1);
  drive(g_paths, CALLS / 2, always, got);
  cp_thr *t = cp_thr_get();
  t->api_calls += 777;
  const uint64_t k0 = t->api_calls;
  drive(g_paths, CALLS / 2, always, got + CALLS / 2);
  size_t bad = 0, sampled = 0;
  for (size_t i = 1; i < CALLS / 2; i++) {   /* call i decided at call i - 1, numbered k0 + i - 1 */
    bad += got[CALLS / 2 + i] != (unsigned char)o_periodic(k0 + i, n);
    sampled += got[CALLS / 2 + i];
  }
  check(bad == 0 && sampled > 0, "N=%d: after the call counter jumped by 777, %zu of %d decisions differ from the rule "
        "(%zu sampled)", n, bad, CALLS / 2 - 1, sampled);
  free(got);
}

/* A loop of 2 calls must not starve its second path (k % N would). */
static void sc_loop(int n) {
  config(DEFAULT_MASK, n, "");
  cp_mask_attach(&g_mask);
  for (size_t k = 0; k < CALLS; k++) g_paths[k] = (uint32_t)(k % 2);
  unsigned char *got = calloc(CALLS, 1);
  drive(g_paths, CALLS, always, got);
  uint64_t per[2] = {0, 0};
  for (size_t k = 0; k < CALLS; k++) per[k % 2] += got[k];
  double expect = CALLS / 2.0 / n;
  check(per[0] > expect / 2 && per[1] > expect / 2,
        "loop of 2, N=%d: both paths sampled near 1/N (%llu, %llu; ~%.0f each)", n,
        (unsigned long long)per[0], (unsigned long long)per[1], expect);
  free(got);
}

/* New paths: forced early; the stream of new paths stays bounded. */
static void sc_new_paths(int n) {
  config(DEFAULT_MASK, n, "");
  cp_mask_attach(&g_mask);
  /* A (path 1) ten times, then B (path 2) for ever: B's first call is not
   * sampled (unless periodic), so B's second call must be. */
  size_t nc = 0;
  for (int i = 0; i < 10; i++) g_paths[nc++] = 1;
  for (int i = 0; i < 200; i++) g_paths[nc++] = 2;
  unsigned char *got = calloc(CALLS, 1);
  drive(g_paths, nc, always, got);
  check(got[10] || got[11], "N=%d: a new path is sampled at its first or second call", n);
  free(got);
  memset(g_seen, 0, sizeof g_seen);
}
static void sc_new_paths_oracle(int n, int distinct, int (*arrives)(uint32_t)) {
  config(DEFAULT_MASK, n, "");
  cp_mask_attach(&g_mask);
  /* distinct: every call a new path (ids 100..) — worst case for forcing;
   * else 5 paths in order with a repeat pattern, some never seen. */
  for (size_t k = 0; k < CALLS; k++)
    g_paths[k] = distinct ? (uint32_t)(100 + k) : (uint32_t)((k * 7 / 3) % 5);
  compare(distinct ? "distinct new paths" : arrives == never ? "5 paths never seen" : "5 paths",
          g_paths, CALLS, n, arrives);
  if (distinct && n > 0) {
    uint64_t c = cp_mask_sampled_calls();
    uint64_t bound = (uint64_t)(CALLS + n - 1) / (uint64_t)n + 64 + (uint64_t)CALLS / (uint64_t)n + 1;
    check(c <= bound, "N=%d: stream of new paths keeps KernelCh bounded (%llu <= %llu)", n,
          (unsigned long long)c, (unsigned long long)bound);
  }
}

/* A path whose KernelCh never arrives forces exactly once. */
static void sc_never_seen(int n) {
  config(DEFAULT_MASK, n, "");
  cp_mask_attach(&g_mask);
  for (size_t k = 0; k < CALLS; k++) g_paths[k] = 9;
  unsigned char *got = calloc(CALLS, 1);
  uint64_t c = drive(g_paths, CALLS, never, got);
  uint64_t periodic = 0;
  for (size_t k = 0; k < CALLS; k++) periodic += (uint64_t)o_periodic(k, n);
  check(c == periodic + 1, "N=%d: unseen path forces once (%llu = %llu periodic + 1)", n,
        (unsigned long long)c, (unsigned long long)periodic);
  free(got);
}

/* Class forcing (gpu_sample_rule.c header): a sweep of 20 sizes, 25 calls
 * each, on one path; with the default small-call rate (one in 16 x N under
 * 1 MiB) the periodic rule alone leaves most sizes without a sample, class
 * forcing gives each its sample by the size's third call, once per class. */
static void sc_class_sweep_a(void) {
  config(DEFAULT_MASK, 16, "");
  g_cfg.gpu_sample_small = 16;
  g_cfg.gpu_sample_small_bytes = 1048576;
  cp_mask_attach(&g_mask);
  enum { SIZES = 20, PER = 25 };
  static uint64_t bytes[SIZES * PER];
  size_t nc = 0;
  for (int i = 0; i < SIZES; i++)
    for (int j = 0; j < PER; j++) { g_paths[nc] = 3; bytes[nc] = 8ull << i; nc++; }
  unsigned char *got = calloc(nc, 1), *before = calloc(nc, 1);
  memset(g_seen, 0, sizeof g_seen);
  drive_sized(g_paths, bytes, nc, always, got);
  o_cls_forcing = 0;
  oracle(g_paths, bytes, nc, 16, 16, 1048576, always, before);
  o_cls_forcing = 1;
  int classes = 0, early = 0, classes_before = 0;
  for (int i = 0; i < SIZES; i++) {
    int any = 0, any_before = 0;
    for (int j = 0; j < PER; j++) { any |= got[i * PER + j]; any_before |= before[i * PER + j]; }
    classes += any;
    classes_before += any_before;
    early += got[i * PER] || got[i * PER + 1] || got[i * PER + 2];
  }
  check(classes == SIZES, "class forcing: every one of %d sizes of a sweep sampled (%d; %d by the rule before it)",
        SIZES, classes, classes_before);
  check(classes_before < SIZES / 2, "the rule before class forcing sampled fewer than half the sizes (%d)", classes_before);
  check(early == SIZES, "class forcing: each size sampled by its third call (%d of %d)", early, SIZES);
  check(cp_mask_sampled_calls() <= (uint64_t)SIZES + nc / 16 + 1,
        "class forcing: about one sample per size, no more (%llu sampled calls)",
        (unsigned long long)cp_mask_sampled_calls());
  free(got);
  free(before);
}
/* The same sweep through the oracle comparison, and one whose samples
 * never arrive (class forcing does not wait for them). */
static void sc_class_oracle(int (*arrives)(uint32_t)) {
  config(DEFAULT_MASK, 16, "");
  g_cfg.gpu_sample_small = 16;
  g_cfg.gpu_sample_small_bytes = 1048576;
  cp_mask_attach(&g_mask);
  static uint64_t bytes[CALLS];
  for (size_t k = 0; k < CALLS; k++) {   /* 3 paths in turn, sizes sweeping 8 B-4 MiB, 10 calls each */
    g_paths[k] = (uint32_t)(k % 3);
    bytes[k] = 8ull << ((k / 30) % 20);
  }
  memset(g_seen, 0, sizeof g_seen);
  compare_sized(arrives == never ? "class forcing, samples never arrive:" : "class forcing, 3 paths sweeping:",
                g_paths, bytes, CALLS, 16, 16, 1048576, arrives);
}
static void sc_class_oracle_a(void) { sc_class_oracle(always); }
static void sc_class_oracle_never_a(void) { sc_class_oracle(never); }

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Periods 0.05:0.05:2 — off, on, off, on, off — with no API call at all. */
static void sc_periods(void) {
  config(DEFAULT_MASK, 16, "0.05:0.05:2");
  double t0 = now_s();
  __atomic_store_n(&g_mask, 12345, __ATOMIC_RELAXED);
  uint32_t v = cp_mask_attach(&g_mask);
  const int m0 = MASK();
  /* judged only if this thread got here before the first window opened:
   * on a loaded machine (a sanitizer build, two cores) it once did not */
  const double late = now_s() - t0;
  check(late >= 0.045 || (v == OFF && m0 == OFF), "periods: GroupApi alone before the first window (%u)%s", v,
        late >= 0.045 ? " (not judged: this thread ran 45 ms late)" : "");
  double flips[16];
  int nflip = 0, last = 0;
  int on_values_ok = 1;
  /* the longest gap between two reads of the mask: a flip seen that late,
   * or two flips inside one gap, say this thread did not run, not that
   * the timer was wrong (a sanitizer build on two busy cores) */
  double prev = now_s() - t0, gap = 0;
  while (now_s() - t0 < 0.40 && nflip < 16) {
    int m = __atomic_load_n(&g_mask, __ATOMIC_RELAXED);
    const double t = now_s() - t0;
    if (t - prev > gap) gap = t - prev;
    prev = t;
    if (m != OFF && (uint32_t)m != DEFAULT_MASK) on_values_ok = 0;
    if ((m != OFF) != last) { flips[nflip++] = t; last = m != OFF; }
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
  }
  const int judged = gap < 0.02;
  if (!judged) printf("# periods: this thread went %.0f ms without reading the mask: flips not judged\n", gap * 1e3);
  check(nflip == 4 || !judged, "periods: 4 flips (%d)", nflip);
  check(on_values_ok, "periods: in a window the mask is the base mask (KernelCh waits for a "
                      "group stop: a group may be open when the window opens)");
  static const double want[4] = {0.05, 0.10, 0.15, 0.20};
  int times_ok = nflip == 4;
  for (int i = 0; i < nflip && i < 4; i++)
    if (flips[i] < want[i] - 0.002 || flips[i] > want[i] + 0.04) times_ok = 0;
  check(times_ok || !judged, "periods: flips at 0.05 0.10 0.15 0.20 s (%.3f %.3f %.3f %.3f)",
        nflip > 0 ? flips[0] : -1, nflip > 1 ? flips[1] : -1, nflip > 2 ? flips[2] : -1,
        nflip > 3 ? flips[3] : -1);
  const char *w = cp_mask_windows();
  double a, b, c, d;
  int got = sscanf(w, "%lf-%lf %lf-%lf", &a, &b, &c, &d);
  check(got == 4 && fabs(a - 0.05) < 1e-6 && fabs(b - 0.10) < 1e-6 && fabs(c - 0.15) < 1e-6 &&
            fabs(d - 0.20) < 1e-6,
        "periods: cp_mask_windows() = \"%s\"", w);
  /* During a window, API calls sample as usual; outside, hooks keep it 0. */
  cp_mask_on_group_start(1);
  cp_mask_on_api_call(1, 0, 0);
  cp_mask_on_group_stop(0);
  check(MASK() == OFF, "periods: a late call outside a window leaves the mask off");
  cp_mask_shutdown();
  cp_mask_shutdown();
  check(1, "periods: shutdown twice is fine");
}

/* Shutdown cancels a long window at once and closes it in the text. */
static void sc_periods_shutdown(void) {
  config(DEFAULT_MASK, 4, "0:100:0");
  cp_mask_attach(&g_mask);
  double t0 = now_s();
  while (MASK() == OFF && now_s() - t0 < 1) {
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  check(MASK() != OFF, "periods 0:100:0: mask on at once");
  double t1 = now_s();
  cp_mask_shutdown();
  check(now_s() - t1 < 0.5, "shutdown returns at once (%.3f s)", now_s() - t1);
  const char *w = cp_mask_windows();
  double a, b;
  check(sscanf(w, "%lf-%lf", &a, &b) == 2 && a == 0 && b >= 0 && b < 1,
        "cancelled window is closed in the text: \"%s\"", w);
}

static void sc_bad_periods(void) {
  const char *bad[] = {"x", "1", "1:", "1:0", "-1:2", "1:2:x", "1:2:-3", "1:2:3:4"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    pid_t pid = fork();
    if (pid == 0) {
      config(DEFAULT_MASK, 16, bad[i]);
      uint32_t v = cp_mask_attach(&g_mask);
      check(v != 0 && g_warnings == 1 && cp_mask_windows()[0] == '\0',
            "COLLPROF_PERIODS=\"%s\": one warning, profiling all the time", bad[i]);
      _exit(0);
    }
    waitpid(pid, NULL, 0);
  }
}

static void sc_misc(void) {
  config(0, 16, "");
  check(cp_mask_attach(&g_mask) == 0 && MASK() == 0, "user mask 0: mask stays 0");
  check(cp_mask_attach(NULL) == 0, "attach(NULL) does not crash");
  cp_mask_shutdown();
  check(cp_mask_windows()[0] == '\0', "no periods: windows text empty");
}
static void sc_kernelch_only(void) {
  config(KC, 16, "");
  cp_mask_attach(&g_mask);
  for (int k = 0; k < 100; k++) {
    cp_mask_on_group_start(1);
    cp_mask_on_api_call(1, cp_mask_kernelch_on(), 0);
    cp_mask_on_group_stop(0);
  }
  check(MASK() == KC && cp_mask_sampled_calls() == 100,
        "mask KernelCh only: sampled on every call (no callback could turn it back on)");
}
static void sc_full_every(void) {
  config(4095, 1, "");
  check(cp_mask_attach(&g_mask) == 4095, "mask 4095, N=1: mask 4095");
  for (int k = 0; k < 100; k++) cp_mask_on_api_call(1, 1, 0);
  check(MASK() == 4095 && cp_mask_kernelch_on(), "mask 4095, N=1: stays 4095");
  config(4095, 0, "");
}
static void sc_full_never(void) {
  config(4095, 0, "");
  check(cp_mask_attach(&g_mask) == (4095 & ~KC), "mask 4095, N=0: KernelCh stripped");
  check(!cp_mask_kernelch_on(), "N=0: cp_mask_kernelch_on() is 0");
}

/* Inside a group the mask never changes (NCCL reads it at every call of
 * the group; a Send and its Recv with different KernelCh hang NCCL 2.28);
 * the decision of the group's calls is published when the last open group
 * stops, and only then. */
static void sc_group_hold(void) {
  config(DEFAULT_MASK, 2, "");
  cp_mask_attach(&g_mask);
  int before = MASK(), changed = 0, got_kc_decision = 0;
  cp_mask_on_group_start(1);
  cp_mask_on_group_start(1);            /* a nested (second) open group */
  for (uint32_t k = 0; k < 40; k++) {
    cp_mask_on_api_call(200 + k, (before & KC) != 0, 0);
    if (MASK() != before) changed = 1;
  }
  cp_mask_on_group_stop(0);
  check(!changed && MASK() == before, "N=2: no change while a group is open (40 calls, 2 groups)");
  cp_mask_on_group_stop(0);
  /* The 40 calls' last decision: periodic(40) or forcing of a new path. */
  got_kc_decision = (MASK() & ~KC) == DEFAULT_MASK;
  check(got_kc_decision, "N=2: the last group stop publishes (mask 0x%x)", (unsigned)MASK());
  /* Over many groups of 3 calls the bit changes only between groups. */
  int bad = 0;
  uint64_t groups_on = 0;
  for (int gix = 0; gix < 3000; gix++) {
    int m = MASK();
    groups_on += (m & KC) != 0;
    cp_mask_on_group_start(1);
    for (int c = 0; c < 3; c++) {
      cp_mask_on_api_call(7, (m & KC) != 0, 0);
      if (MASK() != m) bad = 1;
    }
    cp_mask_on_group_stop(0);
  }
  check(!bad, "N=2: groups of 3 calls: the mask never changes inside a group");
  check(groups_on > 300 && groups_on < 2700, "N=2: groups of 3 calls: %llu of 3000 groups sampled",
        (unsigned long long)groups_on);
}

/* GroupApi from a second thread: no point is known to be outside every
 * group any more, so the mask freezes as it is, with one line. */
static void sc_second_thread(void) {
  config(DEFAULT_MASK, 4, "");
  cp_mask_attach(&g_mask);
  for (int k = 0; k < 10; k++) {
    cp_mask_on_group_start(11);
    cp_mask_on_api_call(1, (MASK() & KC) != 0, 0);
    cp_mask_on_group_stop(0);
  }
  check(!cp_mask_frozen() && g_warnings == 0, "one thread: not frozen, no warning");
  cp_mask_on_group_start(12);
  int m = MASK();
  check(cp_mask_frozen() && g_warnings == 1, "a second thread's group freezes the mask, one warning");
  cp_mask_on_api_call(1, 0, 0);
  cp_mask_on_group_stop(0);
  int same = 1;
  for (int k = 0; k < 100; k++) {
    cp_mask_on_group_start(11 + k % 2);
    cp_mask_on_api_call(2 + (uint32_t)k, (MASK() & KC) != 0, 0);
    cp_mask_on_group_stop(0);
    if (MASK() != m) same = 0;
  }
  check(same && g_warnings == 1, "frozen: 100 more calls from both threads leave the mask 0x%x", m);
}

/* Start delay (COLLPROF_GPU_SAMPLE_DELAY_MS, start_delay.c): no KernelCh until D ms after the first group start, not even at
 * attach or on the first call, and no path loses its forced sample to it;
 * a second thread within D freezes the mask with KernelCh off. */
static void nap_ms(int ms);
static void delayed_call(int tid, uint32_t path, int *kc_seen) {
  int s = (MASK() & KC) != 0;
  if (s) { *kc_seen = 1; g_seen[path] = 1; }   /* its KernelCh came */
  cp_mask_on_group_start(tid);
  cp_mask_on_api_call(path, s, 0);
  cp_mask_on_group_stop(0);
  if (MASK() & KC) *kc_seen = 1;
}
static void sc_start_delay(void) {
  config(DEFAULT_MASK, 16, "");
  g_cfg.gpu_sample_delay_ms = 200;
  int kc = 0;
  uint32_t v = cp_mask_attach(&g_mask);
  check(!(v & KC) && v == (DEFAULT_MASK & 4095u), "delay 200 ms: attach writes the base mask without KernelCh (0x%x)", v);
  const double t0 = now_s();
  for (uint32_t p = 1; p <= 50; p++) delayed_call(1, p, &kc);
  const double took = now_s() - t0;   /* judged only if they ran within the delay (a loaded machine) */
  check((!kc && cp_mask_sampled_calls() == 0) || took >= 0.19,
        "delay: 50 calls on 50 new paths within it, KernelCh never on%s", took >= 0.19 ? " (not judged: they took 190 ms)" : "");
  nap_ms(250);
  delayed_call(1, 1, &kc);   /* the first group stop after D ends it */
  check(!kc, "delay: the call that ends it is not sampled, nor is the next one published yet");
  /* each path called twice in a row: its first call forces the second,
   * unless it has its sample already, which it cannot have lost to the
   * delay (no path was marked as forced during it) */
  int first_on = -1;
  for (uint32_t p = 1; p <= 50; p++)
    for (int twice = 0; twice < 2; twice++) {
      int before = kc;
      delayed_call(1, p, &kc);
      if (!before && kc && first_on < 0) first_on = (int)(2 * (p - 1) + twice);
    }
  check(first_on >= 0 && first_on <= 1, "delay over: KernelCh on within 2 calls (a forced sample; at call %d)", first_on);
  int unseen = 0;
  for (uint32_t p = 1; p <= 50; p++) unseen += !g_seen[p];
  check(unseen == 0, "delay over: every path seen during the delay gets its forced sample (%d without)", unseen);
}
static void sc_start_delay_threads(void) {
  config(DEFAULT_MASK, 16, "");
  g_cfg.gpu_sample_delay_ms = 1000;
  int kc = 0;
  cp_mask_attach(&g_mask);
  for (uint32_t k = 0; k < 3; k++) delayed_call(11, 1 + k, &kc);
  cp_mask_on_group_start(12);
  check(cp_mask_frozen() && !(MASK() & KC), "delay: a second thread within it, after 3 calls, freezes the mask with KernelCh off");
  check(strstr(cp_mask_frozen_text(), "KernelCh off") != NULL, "delay: frozen text \"%s\"", cp_mask_frozen_text());
}
/* Threads whose ranks share a communicator: the second starts its first
 * call while the first thread's first call (connection set-up, with it)
 * is still inside its group. */
static void first_call_overlap(void) {
  cp_mask_attach(&g_mask);
  cp_mask_on_group_start(11);
  cp_mask_on_api_call(1, (MASK() & KC) != 0, 0);
  cp_mask_on_group_start(12);
}
static void sc_delay_overlap(void) {
  config(DEFAULT_MASK, 16, "");
  g_cfg.gpu_sample_delay_ms = 1000;
  first_call_overlap();
  check(cp_mask_frozen() && !(MASK() & KC), "delay: a second thread inside the first call freezes KernelCh off");
}
static void sc_no_delay_overlap(void) {
  config(DEFAULT_MASK, 16, "");   /* delay 0: the first call is a sample */
  first_call_overlap();
  check(cp_mask_frozen() && (MASK() & KC), "no delay: the same freezes KernelCh on (the bias the delay removes)");
}
/* The default (auto) delay: none where every init so far is of a distinct
 * commId at the first group start, D otherwise; `ids` the commIds of the
 * inits, UINT64_MAX for an init whose id has not come yet (attach only). */
static void auto_delay(const uint64_t *ids, size_t nids, int want_delay, const char *what) {
  config(DEFAULT_MASK, 16, "");
  g_cfg.gpu_sample_delay_ms = 1000;
  g_cfg.gpu_sample_delay_auto = 1;
  for (size_t i = 0; i < nids; i++) {
    cp_mask_attach(&g_mask);
    if (ids[i] != UINT64_MAX) cp_mask_comm_id(ids[i]);
  }
  int kc = 0;
  /* the calls from the thread that inited (the real tid, as start_common.h passes) */
  for (uint32_t p = 1; p <= 4; p++) delayed_call(my_tid(), p, &kc);
  check(kc == !want_delay && cp_mask_start_delay_ms() == (want_delay ? 1000u : 0u),
        "auto delay, %s: %s (KernelCh %s in 4 calls, delay %u ms)", what, want_delay ? "the delay runs" : "no delay",
        kc ? "on" : "never on", cp_mask_start_delay_ms());
}
/* One communicator inited on this thread, the first call from another:
 * a program that inits on its main thread and calls from workers. */
/* The default (auto) delay of 1000 ms, communicator 7 inited on this thread. */
static void auto_with_one_init(void) {
  config(DEFAULT_MASK, 16, "");
  g_cfg.gpu_sample_delay_ms = 1000;
  g_cfg.gpu_sample_delay_auto = 1;
  cp_mask_attach(&g_mask);
  cp_mask_comm_id(7);
}
static void sc_auto_other_caller(void) {
  auto_with_one_init();
  int kc = 0;
  for (uint32_t p = 1; p <= 4; p++) delayed_call(my_tid() + 1, p, &kc);
  check(!kc && cp_mask_start_delay_ms() == 1000u,
        "auto delay, one communicator, the first call from a thread that did not init it: the delay runs "
        "(KernelCh %s in 4 calls, delay %u ms)", kc ? "on" : "never on", cp_mask_start_delay_ms());
}
static void sc_auto_one(void) { const uint64_t i[] = {7}; auto_delay(i, 1, 0, "one communicator"); }
static void sc_auto_distinct(void) { const uint64_t i[] = {7, 9, 11}; auto_delay(i, 3, 0, "three, one rank each"); }
static void sc_auto_shared(void) { const uint64_t i[] = {7, 7}; auto_delay(i, 2, 1, "two ranks of one communicator"); }
static void sc_auto_zero(void) { const uint64_t i[] = {0}; auto_delay(i, 1, 1, "commId 0 (unknown)"); }
static void sc_auto_noid(void) { const uint64_t i[] = {7, UINT64_MAX}; auto_delay(i, 2, 1, "an init whose id is not known yet"); }
/* Two communicators of distinct commIds, each inited on a thread of its
 * own (threads that each drive one): the delay runs. */
static void *init_on_thread(void *id) {
  cp_mask_attach(&g_mask);
  cp_mask_comm_id(*(const uint64_t *)id);
  return NULL;
}
/* ...and one whose thread stays alive (a thread of the program, which
 * will call on its communicator) until `g_hold_release`. */
static pthread_mutex_t g_hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_hold_cv = PTHREAD_COND_INITIALIZER;
static int g_hold_inited, g_hold_release;
static void *init_and_stay(void *id) {
  init_on_thread(id);
  pthread_mutex_lock(&g_hold_mu);
  g_hold_inited = 1;
  pthread_cond_broadcast(&g_hold_cv);
  while (!g_hold_release) pthread_cond_wait(&g_hold_cv, &g_hold_mu);
  pthread_mutex_unlock(&g_hold_mu);
  return NULL;
}
static void sc_auto_threads(void) {
  auto_with_one_init();
  const uint64_t other = 9;
  pthread_t th;
  if (pthread_create(&th, NULL, init_and_stay, (void *)&other) != 0) { check(0, "pthread_create"); return; }
  pthread_mutex_lock(&g_hold_mu);
  while (!g_hold_inited) pthread_cond_wait(&g_hold_cv, &g_hold_mu);
  pthread_mutex_unlock(&g_hold_mu);
  int kc = 0;
  for (uint32_t p = 1; p <= 4; p++) delayed_call(my_tid(), p, &kc);
  pthread_mutex_lock(&g_hold_mu);
  g_hold_release = 1;
  pthread_cond_broadcast(&g_hold_cv);
  pthread_mutex_unlock(&g_hold_mu);
  pthread_join(th, NULL);
  check(!kc && cp_mask_start_delay_ms() == 1000u,
        "auto delay, two distinct communicators inited on two threads, both alive at the first call: the delay runs "
        "(KernelCh %s in 4 calls, delay %u ms)", kc ? "on" : "never on", cp_mask_start_delay_ms());
}
/* Communicators inited each on a thread that has exited by the first call
 * (NCCL's own: one per init of a group of several, or of a non-blocking
 * init): no delay, as for inits on the calling thread. */
static void inits_on_gone_threads(const uint64_t *ids, int n, const char *what) {
  config(DEFAULT_MASK, 16, "");
  g_cfg.gpu_sample_delay_ms = 1000;
  g_cfg.gpu_sample_delay_auto = 1;
  pthread_t th[2];
  for (int i = 0; i < n && i < 2; i++)
    if (pthread_create(&th[i], NULL, init_on_thread, (void *)&ids[i]) != 0) { check(0, "pthread_create"); return; }
  for (int i = 0; i < n && i < 2; i++) pthread_join(th[i], NULL);
  int kc = 0;
  for (uint32_t p = 1; p <= 4; p++) delayed_call(my_tid(), p, &kc);
  check(kc && cp_mask_start_delay_ms() == 0u, "auto delay, %s: no delay (KernelCh %s in 4 calls, delay %u ms)", what,
        kc ? "on" : "never on", cp_mask_start_delay_ms());
}
static void sc_auto_threads_gone(void) {
  const uint64_t ids[2] = {7, 9};
  inits_on_gone_threads(ids, 2, "two distinct communicators inited on two threads that have exited (NCCL's grouped init)");
}
static void sc_auto_init_thread_gone(void) {
  const uint64_t id = 7;
  inits_on_gone_threads(&id, 1, "one communicator inited on a thread that has exited (NCCL's non-blocking init)");
}
static void sc_auto_many(void) {
  uint64_t i[65];
  for (size_t k = 0; k < 65; k++) i[k] = 100 + k;
  auto_delay(i, 65, 1, "65 communicators (more than it keeps)");
}
static void sc_delay_n1(void) {
  config(DEFAULT_MASK, 1, "");
  g_cfg.gpu_sample_delay_ms = 1000;
  uint32_t v = cp_mask_attach(&g_mask);
  int kc = 0, all = 1;
  for (uint32_t k = 0; k < 5; k++) { delayed_call(1, 1, &kc); all &= (MASK() & KC) != 0; }
  check((v & KC) && all, "N=1 ignores the delay: KernelCh on from attach");
}

/* Lean calls (COLLPROF_LEAN, mask_control.c "Lean calls"): a group stop
 * told lean_ok publishes GroupApi|CollApi|P2pApi|ProxyCtrl for the next
 * call unless KernelCh is wanted, never inside a group, never once frozen
 * (the freeze publishes the base), and not at all without COLLPROF_LEAN. */
#define LEAN (GROUPAPI | 512 | 1024 | 32)
static void sc_lean(void) {
  config(DEFAULT_MASK, 16, "");
  g_cfg.lean = 1;
  cp_mask_attach(&g_mask);
  check(cp_mask_lean_on(), "COLLPROF_LEAN=1, mask 4031: lean calls on");
  int lean = 0, kc = 0, other = 0, kc_and_lean = 0;
  for (uint32_t k = 0; k < 400; k++) {
    const int m = MASK();
    if (m == LEAN) lean++;
    else if (m & KC) kc++;
    else if (m != DEFAULT_MASK) other++;
    if (cp_mask_lean_value((uint32_t)m) && (m & KC)) kc_and_lean++;
    g_seen[1] = 1;   /* the path has a GPU sample: no forcing after the first */
    cp_mask_on_group_start(1);
    cp_mask_on_api_call(1, (m & KC) != 0, 0);
    cp_mask_on_group_stop(1);
  }
  check(lean > 300 && kc >= 20 && other == 0 && kc_and_lean == 0,
        "lean_ok at every stop: %d lean calls, %d with KernelCh (full), %d other masks", lean, kc, other);
  check(cp_mask_lean_value(LEAN) && !cp_mask_lean_value(DEFAULT_MASK), "cp_mask_lean_value tells the lean mask");
  /* not lean_ok: the base */
  cp_mask_on_group_start(1);
  cp_mask_on_api_call(1, 0, 0);
  cp_mask_on_group_stop(0);
  check(MASK() == DEFAULT_MASK || (MASK() & KC), "a stop without lean_ok publishes the base (0x%x)", MASK());
  /* inside a group the mask does not change */
  cp_mask_on_group_start(1);
  cp_mask_on_group_start(1);
  const int before = MASK();
  cp_mask_on_api_call(1, (before & KC) != 0, 0);
  cp_mask_on_group_stop(1);   /* the inner one */
  check(MASK() == before, "an inner group's stop changes nothing");
  cp_mask_on_group_stop(1);
  /* lean now (or KernelCh): a second thread freezes, and the mask becomes the base */
  for (int k = 0; k < 40 && MASK() != LEAN; k++) {
    cp_mask_on_group_start(1);
    cp_mask_on_api_call(1, (MASK() & KC) != 0, 0);
    cp_mask_on_group_stop(1);
  }
  check(MASK() == LEAN, "lean again before the freeze");
  cp_mask_on_group_start(2);
  check(cp_mask_frozen() && MASK() == DEFAULT_MASK, "a second thread freezes the mask at the base (0x%x)", MASK());
  int stays = 1;
  for (int k = 0; k < 50; k++) {
    cp_mask_on_group_start(1 + k % 2);
    cp_mask_on_api_call(1, 0, 0);
    cp_mask_on_group_stop(1);
    if (MASK() != DEFAULT_MASK) stays = 0;
  }
  check(stays, "frozen: lean_ok no longer publishes the lean mask");
}
static void sc_lean_off(void) {
  config(DEFAULT_MASK, 16, "");
  cp_mask_attach(&g_mask);
  int lean = 0;
  for (uint32_t k = 0; k < 200; k++) {
    if (MASK() == LEAN) lean++;
    cp_mask_on_group_start(1);
    cp_mask_on_api_call(1, (MASK() & KC) != 0, 0);
    cp_mask_on_group_stop(1);
  }
  check(!cp_mask_lean_on() && lean == 0, "without COLLPROF_LEAN no call is lean (%d)", lean);
}
static void sc_lean_n0(void) {
  /* GPU sampling off: the mask switches for lean calls alone */
  config(DEFAULT_MASK, 0, "");
  g_cfg.lean = 1;
  cp_mask_attach(&g_mask);
  int lean = 0;
  for (uint32_t k = 0; k < 100; k++) {
    if (MASK() == LEAN) lean++;
    cp_mask_on_group_start(1);
    cp_mask_on_api_call(1, 0, 0);
    cp_mask_on_group_stop(k % 10 != 9);
  }
  check(lean == 90, "N=0, lean_ok at 9 stops in 10: 90 of 100 calls lean, the first and 9 after a stop without it full (%d)", lean);
}
static void sc_lean_api_mask(void) {
  /* a base of the API events alone: nothing to leave out, no lean calls */
  config(GROUPAPI | 512 | 1024, 16, "");
  g_cfg.lean = 1;
  cp_mask_attach(&g_mask);
  check(!cp_mask_lean_on(), "base mask 1792: lean calls off (nothing to leave out)");
}

/* v4 (NCCL 2.27) has no GroupApi events: no safe point, so N >= 2 turns
 * KernelCh off with one line; N = 1 keeps it on without one. */
static void sc_v4(int n) {
  config(DEFAULT_MASK, n, "");
  cp_mask_api_v4();
  uint32_t v = cp_mask_attach(&g_mask);
  int want_kc = n == 1;
  check(((v & KC) != 0) == want_kc && (v & ~(uint32_t)KC) == DEFAULT_MASK,
        "v4, N=%d: KernelCh %s (mask 0x%x)", n, want_kc ? "on" : "off", v);
  for (int k = 0; k < 100; k++) cp_mask_on_api_call(1 + (uint32_t)k, (MASK() & KC) != 0, 0);
  check((uint32_t)MASK() == v, "v4, N=%d: 100 calls leave the mask as it is", n);
  check(g_warnings == (n >= 2), "v4, N=%d: %d warning(s)", n, g_warnings);
}

/* A window that closes while KernelCh is on: the mask drops to 0 at the
 * next group stop, not in the middle of a group.  The window is 0.3 s
 * long, so that a thread the scheduler holds back (a sanitizer build on a
 * loaded machine held it past a 0.05-s window) still sees it open. */
static void sc_window_close(void) {
  config(DEFAULT_MASK, 1, "0:0.3:1");
  cp_mask_attach(&g_mask);
  double t0 = now_s();
  while (MASK() == OFF && now_s() - t0 < 1) {
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
  check((uint32_t)MASK() == DEFAULT_MASK, "window open: base mask, KernelCh not yet (0x%x)",
        (unsigned)MASK());
  cp_mask_on_group_start(1);
  cp_mask_on_api_call(1, 0, 0);
  cp_mask_on_group_stop(0);
  check((uint32_t)MASK() == (DEFAULT_MASK | KC), "N=1: KernelCh at the first group stop (0x%x)",
        (unsigned)MASK());
  cp_mask_on_group_start(1);            /* a group open across the window's end */
  while (now_s() - t0 < 0.4) {
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  check((uint32_t)MASK() == (DEFAULT_MASK | KC),
        "window ended inside a group: mask unchanged (0x%x)", (unsigned)MASK());
  cp_mask_on_api_call(1, 1, 0);
  cp_mask_on_group_stop(0);
  check(MASK() == OFF, "...and off (GroupApi alone) at that group's stop (0x%x)", (unsigned)MASK());
  cp_mask_shutdown();
}

/* ---- spacing (COLLPROF_GPU_SAMPLE_US) ---- */
/* Fast calls (no pause between them: well under 1 us each, a few us
 * under a sanitizer) with S = 2 ms: after the first block of N, blocks
 * grow to 4 N, so 8192 calls get about 8192/64 samples instead of 512.
 * Slow calls (1 ms apart, S = 0.5 ms) keep one in N exactly. */
/* N = 16, COLLPROF_GPU_SAMPLE_US = us, ncalls calls on path 7. */
static void spaced_setup(uint32_t us, size_t ncalls) {
  config(DEFAULT_MASK, 16, "");
  g_cfg.gpu_sample_us = us;
  cp_mask_attach(&g_mask);
  for (size_t k = 0; k < ncalls; k++) g_paths[k] = 7;
}
static void sc_spaced(void) {
  enum { FAST = 8192 };
  spaced_setup(2000, FAST);
  unsigned char *got = calloc(FAST, 1);
  uint64_t c = drive(g_paths, FAST, always, got);
  check(c >= FAST / 64 - 8 && c <= FAST / 32 + 8,   /* 2 N where a sanitizer slows calls past 60 us */
        "spaced, S=2 ms, %d fast calls: %llu samples (fixed N=16: %d; 4 N: %d)", FAST, (unsigned long long)c,
        FAST / 16, FAST / 64);
  free(got);
}
static void sc_spaced_slow(void) {
  enum { SLOW = 97 };
  spaced_setup(500, SLOW);
  g_seen[7] = 1;
  unsigned char got[SLOW];
  uint64_t c = 0;
  for (size_t k = 0; k < SLOW; k++) {
    c += drive(g_paths + k, 1, always, got + k);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  /* call 0 (the first-call sample) and one in each block of 16 after it */
  check(c == 1 + (SLOW - 1) / 16, "spaced, S=0.5 ms, calls 1 ms apart: one in 16 (%llu samples of %d calls)",
        (unsigned long long)c, SLOW);
}

/* ---- small calls (COLLPROF_GPU_SAMPLE_SMALL) ---- */
/* N = 16, M = 4, B = 64 KiB; CALLS calls on path 5, call k of sizes(k)
 * bytes.  Checks module against oracle, and the rates small and other
 * calls got. */
static uint64_t g_bytes[CALLS];
static void small_case(const char *what, uint64_t (*sizes)(size_t), double want_small, double want_large) {
  config(DEFAULT_MASK, 16, "");
  g_cfg.gpu_sample_small = 4;
  g_cfg.gpu_sample_small_bytes = 65536;
  cp_mask_attach(&g_mask);
  for (size_t k = 0; k < CALLS; k++) { g_paths[k] = 5; g_bytes[k] = sizes(k); }
  g_seen[5] = 1;   /* no forcing: the periodic rule alone */
  compare_sized(what, g_paths, g_bytes, CALLS, 16, 4, 65536, always);
  /* the rates, from a second identical run of the oracle */
  unsigned char *s = calloc(CALLS, 1);
  oracle(g_paths, g_bytes, CALLS, 16, 4, 65536, always, s);
  uint64_t n[2] = {0, 0}, got[2] = {0, 0};
  for (size_t k = 1; k < CALLS; k++) {   /* call 0: sampled at attach */
    const int small = g_bytes[k] > 0 && g_bytes[k] < 65536;
    n[small]++;
    got[small] += s[k];
  }
  const double r[2] = {n[0] ? (double)got[0] / (double)n[0] : 0, n[1] ? (double)got[1] / (double)n[1] : 0};
  check(fabs(r[1] - want_small) <= 0.2 * want_small + 1e-12,
        "%s: small calls sampled at %.4f (want %.4f: %llu of %llu)", what, r[1], want_small,
        (unsigned long long)got[1], (unsigned long long)n[1]);
  check(fabs(r[0] - want_large) <= 0.2 * want_large + 1e-12,
        "%s: other calls sampled at %.4f (want %.4f: %llu of %llu)", what, r[0], want_large,
        (unsigned long long)got[0], (unsigned long long)n[0]);
  free(s);
}
static uint64_t all_8b(size_t k) { (void)k; return 8; }
static uint64_t all_1m(size_t k) { (void)k; return 1u << 20; }
static uint64_t all_0b(size_t k) { (void)k; return 0; }
/* an nccl-tests sweep: 8 B to 4 MiB, 50 calls each, over and over */
static uint64_t sweep(size_t k) { return 8ull << (k / 50 % 20); }
/* just under and at the boundary, alternating in runs of 100 */
static uint64_t edge(size_t k) { return k / 100 % 2 ? 65536 : 65535; }
static void sc_small_8b(void) { small_case("small calls, all 8 B", all_8b, 1.0 / 64, 0); }
static void sc_small_1m(void) {
  /* with no small call, the rule of one stream: the same calls as N=16 alone */
  small_case("small calls, all 1 MiB", all_1m, 0, 1.0 / 16);
  unsigned char *a = calloc(CALLS, 1), *b = calloc(CALLS, 1);
  oracle(g_paths, g_bytes, CALLS, 16, 4, 65536, always, a);
  oracle(g_paths, NULL, CALLS, 16, 1, 0, always, b);
  check(memcmp(a, b, CALLS) == 0, "small calls, all 1 MiB: the calls one in N samples, exactly");
  free(a);
  free(b);
}
static void sc_small_0b(void) { small_case("small calls, 0 bytes count as not small", all_0b, 0, 1.0 / 16); }
static void sc_small_sweep(void) { small_case("small calls, a sweep 8 B-4 MiB", sweep, 1.0 / 64, 1.0 / 16); }
static void sc_small_edge(void) { small_case("small calls, 64 KiB - 1 and 64 KiB", edge, 1.0 / 64, 1.0 / 16); }

/* ---- pause (collprof_pause / collprof_resume through cp_mask_set_paused) ---- */
static void one_group(void) {
  cp_mask_on_group_start(1);
  cp_mask_on_api_call(1, (MASK() & KC) != 0, 0);
  cp_mask_on_group_stop(0);
}
static void nap_ms(int ms) {
  struct timespec ts = {0, ms * 1000000L};
  nanosleep(&ts, NULL);
}
#define OFF_FLAG() atomic_load(&cp_hot.off)   /* what the callbacks read */

/* N=16, KernelCh on at the pause (the first call is sampled): the mask
 * waits for a group stop, then is GroupApi alone; resume gives the base
 * mask at once and KernelCh at the next group stop (a first-call sample);
 * the windows text has both windows. */
static void sc_pause_basic(void) {
  config(DEFAULT_MASK, 16, "");
  cp_mask_attach(&g_mask);
  check((uint32_t)MASK() == (DEFAULT_MASK | KC) && !OFF_FLAG() && cp_mask_windows()[0] == '\0',
        "pause: before any pause the first call is sampled, nothing off, no windows text (0x%x)",
        (unsigned)MASK());
  nap_ms(20);
  cp_mask_on_group_start(1);            /* a group open at the pause */
  check(cp_mask_set_paused(1) == 0 && cp_mask_paused() && OFF_FLAG(),
        "pause: returns 0 (was not paused), paused, callbacks told");
  check((uint32_t)MASK() == (DEFAULT_MASK | KC), "pause inside a group with KernelCh on: mask kept (0x%x)",
        (unsigned)MASK());
  cp_mask_on_api_call(1, 1, 0);
  cp_mask_on_group_stop(0);
  check(MASK() == OFF, "...GroupApi alone at the group's stop (0x%x)", (unsigned)MASK());
  check(cp_mask_set_paused(1) == 1 && MASK() == OFF, "pause twice: returns 1, nothing changes");
  for (int k = 0; k < 50; k++) one_group();   /* NCCL's GroupApi-only calls while paused */
  check(MASK() == OFF, "paused: 50 calls leave the mask off");
  nap_ms(20);
  check(cp_mask_set_paused(0) == 1 && !cp_mask_paused() && !OFF_FLAG(), "resume: returns 1, recording on");
  check((uint32_t)MASK() == DEFAULT_MASK, "resume: base mask at once, KernelCh not yet (0x%x)", (unsigned)MASK());
  check(cp_mask_sample_first(), "resume: the next sample is a first-call sample");
  cp_mask_on_group_start(1);
  cp_mask_on_group_stop(0);
  check((uint32_t)MASK() == (DEFAULT_MASK | KC), "resume: KernelCh at the first group stop (0x%x)",
        (unsigned)MASK());
  const char *w = cp_mask_windows();
  double a, b, c;
  int got = sscanf(w, "%lf-%lf %lf-open", &a, &b, &c);
  check(got == 3 && a == 0 && b >= 0.015 && b < 0.5 && c - b >= 0.015 && c < 1,
        "pause: windows \"%s\" (0 to the pause, the resume on)", w);
  cp_mask_shutdown();
  got = sscanf(cp_mask_windows(), "%lf-%lf %lf-%lf", &a, &b, &c, &c);
  check(got == 4, "shutdown closes the open window: \"%s\"", cp_mask_windows());
}

/* KernelCh off at the pause: the mask goes off at once.  N=0: off is 0. */
static void sc_pause_kc_off(void) {
  config(DEFAULT_MASK, 16, "");
  cp_mask_attach(&g_mask);
  for (int k = 0; k < 40 && (MASK() & KC); k++) one_group();
  check(!(MASK() & KC), "N=16: a call without KernelCh comes");
  cp_mask_set_paused(1);
  check(MASK() == OFF, "pause with KernelCh off: GroupApi alone at once (0x%x)", (unsigned)MASK());
  cp_mask_set_paused(0);
  check((uint32_t)MASK() == DEFAULT_MASK, "resume: base mask (0x%x)", (unsigned)MASK());
}
static void sc_pause_n0(void) {
  config(DEFAULT_MASK, 0, "");
  cp_mask_attach(&g_mask);
  cp_mask_set_paused(1);
  check(MASK() == 0, "N=0 (KernelCh never): paused mask is 0 (0x%x)", (unsigned)MASK());
  cp_mask_set_paused(0);
  check((uint32_t)MASK() == DEFAULT_MASK, "N=0: resume gives the base mask back");
}
/* N=1: KernelCh on every call; a pause waits for a group stop (groups are
 * counted for N=1 as well). */
static void sc_pause_n1(void) {
  config(DEFAULT_MASK, 1, "");
  cp_mask_attach(&g_mask);
  cp_mask_on_group_start(1);
  cp_mask_set_paused(1);
  check((uint32_t)MASK() == (DEFAULT_MASK | KC), "N=1: pause inside a group keeps KernelCh (0x%x)",
        (unsigned)MASK());
  cp_mask_on_group_stop(0);
  check(MASK() == OFF, "N=1: off at the group's stop (0x%x)", (unsigned)MASK());
  cp_mask_set_paused(0);
  one_group();
  check((uint32_t)MASK() == (DEFAULT_MASK | KC), "N=1: resume, KernelCh after a group stop (0x%x)",
        (unsigned)MASK());
}
/* COLLPROF_START_PAUSED, and a pause before the first init. */
static void sc_start_paused(void) {
  config(DEFAULT_MASK, 16, "");
  g_cfg.start_paused = 1;
  check(cp_mask_attach(&g_mask) == OFF && OFF_FLAG() && cp_mask_paused(),
        "COLLPROF_START_PAUSED: attach writes GroupApi alone, paused");
  check(strcmp(cp_mask_windows(), "none yet") == 0, "start paused: windows \"none yet\" (\"%s\")",
        cp_mask_windows());
  nap_ms(10);
  cp_mask_set_paused(0);
  double a;
  check(sscanf(cp_mask_windows(), "%lf-open", &a) == 1 && a >= 0.009,
        "resume after a start paused: one window from then (\"%s\")", cp_mask_windows());
}
static void sc_pause_before_init(void) {
  check(cp_mask_set_paused(1) == 0 && OFF_FLAG(), "pause before any init: taken");
  config(DEFAULT_MASK, 16, "");
  check(cp_mask_attach(&g_mask) == OFF, "...the first attach writes the mask off (0x%x)", (unsigned)MASK());
}
/* Frozen with KernelCh off: only KernelCh must stay, so pause and resume
 * still switch the rest.  Frozen with KernelCh on: nothing changes, and a
 * pause only stops the recording. */
static void sc_pause_frozen(void) {
  config(DEFAULT_MASK, 16, "");
  cp_mask_attach(&g_mask);
  for (int k = 0; k < 40 && (MASK() & KC); k++) one_group();
  cp_mask_on_graph_capture();
  int before = MASK();
  cp_mask_set_paused(1);
  one_group();
  check(MASK() == OFF && OFF_FLAG(), "frozen, KernelCh off: pause gives GroupApi alone (0x%x)", (unsigned)MASK());
  cp_mask_set_paused(0);
  for (int k = 0; k < 40; k++) one_group();
  check(MASK() == before && !OFF_FLAG(), "frozen, KernelCh off: resume, the base mask and never KernelCh (0x%x)",
        (unsigned)MASK());
}
static void sc_pause_frozen_kc(void) {
  config(DEFAULT_MASK, 16, "");
  cp_mask_attach(&g_mask);
  check((MASK() & KC) != 0, "the first call is sampled");
  cp_mask_on_graph_capture();
  int before = MASK();
  cp_mask_set_paused(1);
  one_group();
  check(MASK() == before && OFF_FLAG(), "frozen, KernelCh on: pause leaves the mask (0x%x), stops recording",
        (unsigned)MASK());
  cp_mask_set_paused(0);
  check(MASK() == before && !OFF_FLAG(), "frozen, KernelCh on: resume, recording on");
}
/* 100 pauses: the text stays whole within CP_WINDOWS_TEXT, the windows
 * that do not fit counted at its end. */
static void sc_pause_many(void) {
  config(DEFAULT_MASK, 16, "");
  cp_mask_attach(&g_mask);
  for (int k = 0; k < 100; k++) {
    cp_mask_set_paused(1);
    cp_mask_set_paused(0);
  }
  const char *w = cp_mask_windows();
  long more = 0;
  const char *m = strstr(w, " (+");
  int whole = m && sscanf(m, " (+%ld more)", &more) == 1 && m[strlen(m) - 1] == ')';
  int shown = 0;
  for (const char *p = w; p < (m ? m : w + strlen(w)); p++) shown += *p == '-';
  check(strlen(w) < CP_WINDOWS_TEXT && whole && shown + more == 101,
        "101 windows: %d shown whole, %ld counted as more, %zu bytes", shown, more, strlen(w));
}

/* Periods and pause together: on only inside a window and not paused.
 * The window is a second long, and the test waits for its edges rather
 * than for fixed times: under ThreadSanitizer on a loaded 2-core machine a
 * 0.3 s window could open and close before this thread looked. */
static void sc_pause_periods(void) {
  config(DEFAULT_MASK, 4, "0:1:1");
  cp_mask_attach(&g_mask);
  double t0 = now_s();
  while (MASK() == OFF && now_s() - t0 < 3) nap_ms(1);
  check(MASK() != OFF && !OFF_FLAG(), "periods 0:1: the window is on");
  nap_ms(50);
  cp_mask_set_paused(1);
  check(MASK() == OFF && OFF_FLAG(), "pause inside a window: off");
  nap_ms(50);
  cp_mask_set_paused(0);
  check(MASK() != OFF && !OFF_FLAG(), "resume inside the window: on again (0x%x)", (unsigned)MASK());
  while (now_s() - t0 < 4 && (now_s() - t0 < 1.05 || MASK() != OFF)) nap_ms(5);
  check(MASK() == OFF && OFF_FLAG(), "the window's end: off");
  cp_mask_set_paused(1);
  cp_mask_set_paused(0);
  check(MASK() == OFF && OFF_FLAG(), "resume after the last window: still off");
  double a, b, c, d;
  int got = sscanf(cp_mask_windows(), "%lf-%lf %lf-%lf", &a, &b, &c, &d);
  check(got == 4 && a < 0.01 && b > 0.04 && b < 1 && c - b > 0.04 && c < 1 && fabs(d - 1) < 1e-6,
        "two windows, the second ends with the period: \"%s\"", cp_mask_windows());
  cp_mask_shutdown();
}

/* One sample in flight: while a sampled call's KernelCh events are due, a
 * wanted sample is skipped (each counted) and not carried to a later call:
 * after the last of them stops, KernelCh comes back exactly where the
 * periodic rule says; an expectation nobody pays back is dropped after
 * 100 ms, and a late payment of the old epoch no longer counts.  The
 * test numbers the calls itself (k) and asks its own copy of the rule. */
static uint64_t g_k;
static int one_call(uint32_t path) {
  int s = (MASK() & KC) != 0;          /* NCCL reads the mask */
  cp_mask_on_group_start(1);
  cp_mask_on_api_call(path, s, 0);
  cp_mask_on_group_stop(0);
  g_k++;
  return s;
}
static void sc_in_flight(void) {
  const int n = 2;
  config(DEFAULT_MASK, n, "");
  g_seen[1] = 1;                       /* no forcing: the periodic rule alone */
  cp_mask_attach(&g_mask);
  check((MASK() & KC) != 0, "in flight: the first call is sampled");
  cp_mask_on_group_start(1);
  cp_mask_on_api_call(1, 1, 0);
  uint32_t ep = cp_mask_kc_expect(2);  /* its Coll: 2 channels */
  cp_mask_on_group_stop(0);
  g_k = 1;
  check(ep != 0, "in flight: expect returns an epoch (%u)", ep);
  int any = 0;
  uint64_t wanted = 0;
  for (int k = 0; k < 20; k++) {
    wanted += o_periodic(g_k + 1, n);  /* decided in this call, skipped at its stop */
    any |= one_call(1);
  }
  check(!any, "in flight: 20 calls while 2 KernelCh are due, none sampled");
  check(wanted > 0 && cp_mask_samples_deferred() == wanted,
        "in flight: every wanted sample skipped and counted (%llu, rule %llu)",
        (unsigned long long)cp_mask_samples_deferred(), (unsigned long long)wanted);
  cp_mask_kc_done(ep);
  wanted += o_periodic(g_k + 1, n);
  check(!one_call(1) && !(MASK() & KC), "in flight: one of 2 stopped, still nothing sampled");
  cp_mask_kc_done(ep);
  /* gate open: from here on the mask follows the rule, call by call; a
   * carried sample would turn KernelCh on for a call the rule skips */
  int follows = 1;
  for (int k = 0; k < 12; k++) {
    int want = o_periodic(g_k, n);     /* call g_k was decided in call g_k - 1 */
    int s = (MASK() & KC) != 0;
    if (s != want) follows = 0;
    cp_mask_on_group_start(1);
    cp_mask_on_api_call(1, s, 0);
    if (s) cp_mask_kc_done(cp_mask_kc_expect(1));   /* its KernelCh stops at once */
    cp_mask_on_group_stop(0);
    g_k++;
  }
  check(follows && cp_mask_samples_deferred() == wanted,
        "in flight: after the last stop KernelCh follows the rule, nothing carried over (%llu skipped)",
        (unsigned long long)cp_mask_samples_deferred());
  /* a sampled call whose KernelCh never stops */
  uint32_t ep2 = 0;
  for (int k = 0; k < 4 * n && !ep2; k++) {
    int s = (MASK() & KC) != 0;
    cp_mask_on_group_start(1);
    cp_mask_on_api_call(1, s, 0);
    if (s) ep2 = cp_mask_kc_expect(1);
    cp_mask_on_group_stop(0);
    g_k++;
  }
  check(ep2 != 0, "in flight: a sampled call within %d calls", 4 * n);
  double t0 = now_s();
  int before = 0, after = 0;
  while (now_s() - t0 < 0.3) {
    int x = one_call(1);
    if (now_s() - t0 < 0.09) before |= x; else after |= x;
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
  }
  check(!before && after && cp_mask_gate_resets() == 1,
        "in flight: a lost KernelCh holds sampling back ~100 ms, then the expectation is dropped "
        "(%d %d %llu)", before, after, (unsigned long long)cp_mask_gate_resets());
  cp_mask_kc_done(ep2);                /* late, old epoch: ignored */
  uint32_t ep3 = 0;
  for (int k = 0; k < 100 && !ep3; k++) {
    int s = (MASK() & KC) != 0;
    cp_mask_on_group_start(1);
    cp_mask_on_api_call(1, s, 0);
    if (s) ep3 = cp_mask_kc_expect(1);
    cp_mask_on_group_stop(0);
  }
  any = 0;
  for (int k = 0; k < 20; k++) any |= one_call(1);
  check(!any && ep3 && ep3 != ep2, "in flight: a late stop of the old epoch does not open the gate");
}

typedef void (*scenario)(void);
static int g_arg;
static void sc_one_path_a(void) { sc_one_path(g_arg); }
static void sc_loop_a(void) { sc_loop(g_arg); }
static void sc_renumbered_a(void) { sc_renumbered(g_arg); }
static void sc_new_a(void) { sc_new_paths(g_arg); }
static void sc_new_distinct_a(void) { sc_new_paths_oracle(g_arg, 1, always); }
static void sc_new_5_a(void) { sc_new_paths_oracle(g_arg, 0, always); }
static void sc_new_5never_a(void) { sc_new_paths_oracle(g_arg, 0, never); }
static void sc_never_a(void) { sc_never_seen(g_arg); }
static void sc_v4_a(void) { sc_v4(g_arg); }

static int g_n, g_fail;
static void run(scenario f, int arg) {
  int fd[2];
  if (pipe(fd) != 0) { perror("pipe"); exit(1); }
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    g_out = fdopen(fd[1], "w");
    g_arg = arg;
    f();
    fclose(g_out);
    _exit(0);
  }
  close(fd[1]);
  FILE *in = fdopen(fd[0], "r");
  char line[512];
  while (fgets(line, sizeof line, in)) {
    line[strcspn(line, "\n")] = '\0';
    int good = line[0] == '1';
    g_n++;
    if (!good) g_fail++;
    printf("%s %d - %s\n", good ? "ok" : "not ok", g_n, line + 2);
  }
  fclose(in);
  int st;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    g_n++;
    g_fail++;
    printf("not ok %d - scenario process exited abnormally (status %d)\n", g_n, st);
  }
  fflush(stdout);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  static const int ns[] = {1, 4, 16, 0};
  for (size_t i = 0; i < 4; i++) run(sc_one_path_a, ns[i]);
  run(sc_loop_a, 16);
  run(sc_renumbered_a, 16);
  run(sc_renumbered_a, 5);
  run(sc_loop_a, 4);
  run(sc_new_a, 16);
  run(sc_new_a, 4);
  for (size_t i = 0; i < 4; i++) {
    run(sc_new_distinct_a, ns[i]);
    run(sc_new_5_a, ns[i]);
    run(sc_new_5never_a, ns[i]);
  }
  run(sc_never_a, 16);
  run(sc_class_sweep_a, 0);
  run(sc_class_oracle_a, 0);
  run(sc_class_oracle_never_a, 0);
  run(sc_never_a, 4);
  run(sc_periods, 0);
  run(sc_periods_shutdown, 0);
  run(sc_bad_periods, 0);
  run(sc_misc, 0);
  run(sc_kernelch_only, 0);
  run(sc_full_every, 0);
  run(sc_full_never, 0);
  run(sc_group_hold, 0);
  run(sc_second_thread, 0);
  run(sc_start_delay, 0);
  run(sc_auto_one, 0);
  run(sc_auto_other_caller, 0);
  run(sc_auto_init_thread_gone, 0);
  run(sc_auto_distinct, 0);
  run(sc_auto_shared, 0);
  run(sc_auto_zero, 0);
  run(sc_auto_noid, 0);
  run(sc_auto_many, 0);
  run(sc_auto_threads, 0);
  run(sc_auto_threads_gone, 0);
  run(sc_start_delay_threads, 0);
  run(sc_delay_overlap, 0);
  run(sc_no_delay_overlap, 0);
  run(sc_delay_n1, 0);
  run(sc_lean, 0);
  run(sc_lean_off, 0);
  run(sc_lean_n0, 0);
  run(sc_lean_api_mask, 0);
  run(sc_v4_a, 16);
  run(sc_v4_a, 1);
  run(sc_v4_a, 0);
  run(sc_window_close, 0);
  run(sc_in_flight, 0);
  run(sc_spaced, 0);
  run(sc_spaced_slow, 0);
  run(sc_small_8b, 0);
  run(sc_small_1m, 0);
  run(sc_small_0b, 0);
  run(sc_small_sweep, 0);
  run(sc_small_edge, 0);
  run(sc_pause_basic, 0);
  run(sc_pause_kc_off, 0);
  run(sc_pause_n0, 0);
  run(sc_pause_n1, 0);
  run(sc_start_paused, 0);
  run(sc_pause_before_init, 0);
  run(sc_pause_frozen, 0);
  run(sc_pause_frozen_kc, 0);
  run(sc_pause_periods, 0);
  run(sc_pause_many, 0);
  printf("1..%d\n", g_n);
  return g_fail != 0;
}
