/*
 * test_jfmt.c — the trace writer's number formatting (src/jfmt.h) against
 * snprintf: every value below 100000, each power of ten and its
 * neighbours up to UINT64_MAX, and a million pseudo-random values spread
 * over all bit lengths, for unsigned, signed, hex, pointer and
 * microsecond formats.  The trace is read by tools that trust these bytes.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "tap.h"
#include "jfmt.h"

static int check_u(uint64_t v) {
  char a[32], b[32];
  *jf_u64(a, v) = 0;
  snprintf(b, sizeof b, "%" PRIu64, v);
  return strcmp(a, b) == 0;
}
static int check_i(int64_t v) {
  char a[32], b[32];
  *jf_i64(a, v) = 0;
  snprintf(b, sizeof b, "%" PRId64, v);
  return strcmp(a, b) == 0;
}
static int check_x(uint64_t v) {
  char a[32], b[32];
  *jf_hexdigits(a, v) = 0;
  snprintf(b, sizeof b, "%" PRIx64, v);
  return strcmp(a, b) == 0;
}
static int check_ptr(uint64_t v) {
  char a[40], b[40];
  *jf_ptr(a, v) = 0;
  if (v) snprintf(b, sizeof b, "\"0x%" PRIx64 "\"", v);
  else snprintf(b, sizeof b, "null");
  return strcmp(a, b) == 0;
}
static int check_us3(uint64_t ns) {
  char a[40], b[40];
  *jf_us3(a, ns) = 0;
  snprintf(b, sizeof b, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
  return strcmp(a, b) == 0;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) {   /* xorshift64*, then a random bit length */
  rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
  uint64_t r = rng * 0x2545F4914F6CDD1Dull;
  return r >> (r & 63);
}

int main(void) {
  int bad = 0;
  for (uint64_t v = 0; v < 100000; v++) bad += !check_u(v);
  ok(bad == 0, "jf_u64: 0 .. 99999 as snprintf (%d wrong)", bad);
  bad = 0;
  uint64_t p = 1;
  for (int k = 0; k < 20; k++, p *= 10) bad += !check_u(p - 1) + !check_u(p) + !check_u(p + 1);
  bad += !check_u(UINT64_MAX) + !check_u(UINT64_MAX - 1);
  for (int b = 0; b < 64; b++) bad += !check_u(1ull << b) + !check_u((1ull << b) - 1);
  ok(bad == 0, "jf_u64: powers of ten and of two, their neighbours, UINT64_MAX (%d wrong)", bad);
  int bu = 0, bi = 0, bx = 0, bp = 0, bt = 0;
  for (int i = 0; i < 1000000; i++) {
    uint64_t v = next();
    bu += !check_u(v);
    bi += !check_i((int64_t)v) + !check_i(-(int64_t)(v >> 1));
    bx += !check_x(v);
    bp += !check_ptr(v);
    bt += !check_us3(v);
  }
  bi += !check_i(INT64_MIN) + !check_i(INT64_MAX) + !check_i(0) + !check_i(-1);
  for (uint64_t v = 0; v < 70000; v++) bx += !check_x(v);
  bx += !check_x(UINT64_MAX);
  for (int b = 0; b < 64; b++) bx += !check_x(1ull << b) + !check_x((1ull << b) - 1);
  bp += !check_ptr(0);
  ok(bu == 0, "jf_u64: a million random values of every bit length (%d wrong)", bu);
  ok(bi == 0, "jf_i64: random, negative, INT64_MIN and INT64_MAX (%d wrong)", bi);
  ok(bx == 0, "jf_hexdigits: 0 .. 69999, powers of two, random, UINT64_MAX (%d wrong)", bx);
  ok(bp == 0, "jf_ptr: \"0x...\" and null for 0 (%d wrong)", bp);
  ok(bt == 0, "jf_us3: microseconds with three decimals (%d wrong)", bt);
  return done_testing();
}
