/*
 * tap.h — minimal TAP output for the C unit tests (test/unit/test_*.c):
 * ok(cond, name...), is_u(got, want, name), diag(...), done_testing().
 * Header-only so every test binary stays one file.
 */
#ifndef COLLPROF_TEST_TAP_H
#define COLLPROF_TEST_TAP_H
#include <stdarg.h>
#include <stdio.h>
#include <inttypes.h>

static int tap_n, tap_fail;

static inline int tap_ok(int cond, const char *fmt, ...) {
  va_list ap;
  printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
  if (!cond) tap_fail++;
  return cond;
}
#define ok(cond, ...) tap_ok(!!(cond), __VA_ARGS__)
#define is_u(got, want, ...)                                                               \
  do {                                                                                     \
    uint64_t g_ = (uint64_t)(got), w_ = (uint64_t)(want);                                  \
    if (!tap_ok(g_ == w_, __VA_ARGS__))                                                    \
      printf("#   got: %" PRIu64 "\n#   expected: %" PRIu64 "\n", g_, w_);                  \
  } while (0)
#define is_s(got, want, ...)                                                               \
  do {                                                                                     \
    const char *g_ = (got), *w_ = (want);                                                  \
    if (!tap_ok(g_ && w_ && strcmp(g_, w_) == 0, __VA_ARGS__))                             \
      printf("#   got: '%s'\n#   expected: '%s'\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)"); \
  } while (0)
#define diag(...) (printf("# "), printf(__VA_ARGS__), printf("\n"), fflush(stdout))
static inline int done_testing(void) {
  printf("1..%d\n", tap_n);
  fflush(stdout);
  return tap_fail ? 1 : 0;
}
#endif
