/*
 * test_clock.c — the plugin's clock (src/clock.c): every reading, TSC or
 * not, lies between two CLOCK_MONOTONIC readings taken around it (plus the
 * test skew), across the re-anchors of the first second, and never goes
 * back by more than the re-anchor tolerance.  Each setting runs in a child
 * of its own (`--probe`), because the clock reads its environment once, at
 * load: the default (the TSC where the machine has an invariant one),
 * COLLPROF_NO_TSC=1, and a 5 s skew with and without the TSC.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "tap.h"
#include "clock.h"

#define SPAN_NS 1200000000ull     /* covers re-anchors at 2, 10, 42, 170, 682 ms */
#define TOL_NS 20000              /* clock.h promises well under a microsecond of drift */

static uint64_t mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_i64(const void *x, const void *y) {
  const int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

/* One line: uses_tsc, worst distance outside the bracket, worst step back,
 * skew seen (median of reading minus bracket middle), readings. */
static int probe(void) {
  const int64_t skew = cp_clock_skew();
  uint64_t start = mono(), prev = 0;
  int64_t worst_out = 0, worst_back = 0;
  long n = 0;
  static int64_t off[20000];
  while (mono() - start < SPAN_NS && n < 20000) {
    const uint64_t a = mono(), c = cp_clock_now(), b = mono();
    const int64_t lo = (int64_t)(a + (uint64_t)skew), hi = (int64_t)(b + (uint64_t)skew);
    int64_t out = 0;
    if ((int64_t)c < lo) out = lo - (int64_t)c;
    if ((int64_t)c > hi) out = (int64_t)c - hi;
    if (out > worst_out) worst_out = out;
    if (prev && c < prev && (int64_t)(prev - c) > worst_back) worst_back = (int64_t)(prev - c);
    prev = c;
    off[n++] = (int64_t)c - (int64_t)(a + (b - a) / 2);
    struct timespec nap = {0, 50000};
    nanosleep(&nap, NULL);
  }
  qsort(off, (size_t)n, sizeof off[0], cmp_i64);   /* for the median */
  printf("%d %" PRId64 " %" PRId64 " %" PRId64 " %ld\n", cp_clock_uses_tsc(), worst_out, worst_back,
         n ? off[n / 2] : 0, n);
  return 0;
}
typedef struct { int tsc; int64_t out, back, median_off; long n; int ok; } result;

static result run_probe(const char *self, const char *env) {
  result r = {0, 0, 0, 0, 0, 0};
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "env -u COLLPROF_NO_TSC -u COLLPROF_TEST_CLOCK_SKEW_NS %s '%s' --probe", env, self);
  FILE *f = popen(cmd, "r");
  if (!f) return r;
  r.ok = fscanf(f, "%d %" SCNd64 " %" SCNd64 " %" SCNd64 " %ld", &r.tsc, &r.out, &r.back, &r.median_off, &r.n) == 5;
  r.ok = pclose(f) == 0 && r.ok;
  return r;
}

static result check(const char *self, const char *env, const char *what, int64_t skew, int want_tsc) {
  result r = run_probe(self, env);
  ok(r.ok && r.n > 1000, "%s: the probe ran (%ld readings over 1.2 s)", what, r.n);
  if (want_tsc >= 0) ok(r.tsc == want_tsc, "%s: %s", what, want_tsc ? "reads the TSC" : "reads clock_gettime");
  ok(r.out <= TOL_NS, "%s: every reading within %d us of the CLOCK_MONOTONIC bracket around it (worst %" PRId64 " ns)",
     what, TOL_NS / 1000, r.out);
  ok(r.back <= TOL_NS, "%s: never back by more than %d us across re-anchors (worst %" PRId64 " ns)", what,
     TOL_NS / 1000, r.back);
  const int64_t d = r.median_off - skew;
  ok(d > -TOL_NS && d < TOL_NS, "%s: offset from CLOCK_MONOTONIC is the skew (%" PRId64 " ns, want %" PRId64 ")",
     what, r.median_off, skew);
  return r;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--probe") == 0) return probe();
  char self[4096];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) { printf("1..0 # SKIP no /proc/self/exe\n"); return 0; }
  self[n] = '\0';
#ifdef CP_CLOCK_TSC
  /* The TSC is used when the machine has an invariant one: say which. */
  result r = check(self, "", "default", 0, -1);
  diag("this machine: %s", r.tsc ? "TSC" : "no invariant TSC, clock_gettime");
#else
  check(self, "", "default", 0, 0);
#endif
  check(self, "COLLPROF_NO_TSC=1", "COLLPROF_NO_TSC=1", 0, 0);
  check(self, "COLLPROF_TEST_CLOCK_SKEW_NS=5000000000", "skew 5 s", 5000000000ll, -1);
  check(self, "COLLPROF_NO_TSC=1 COLLPROF_TEST_CLOCK_SKEW_NS=-3000000", "skew -3 ms, no TSC", -3000000ll, 0);
  return done_testing();
}
