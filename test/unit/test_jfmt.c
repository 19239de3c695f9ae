/*
 * test_jfmt.c — the trace writer's number formatting (src/jfmt.h) against
 * snprintf: every value below 100000, each power of ten and its
 * neighbours up to UINT64_MAX, and a million pseudo-random values spread
 * over all bit lengths, for unsigned, signed, hex, pointer and
 * microsecond formats.  The trace is read by tools that trust these bytes.
 * Then the line formatter's caches (trace_json.c: a timestamp's high
 * digits, a thread's pid and tid): state lines for runs of nearby and far
 * apart times and changing threads, each "ts", "pid" and "tid" as
 * snprintf writes them.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "tap.h"
#include "jfmt.h"
#include "trace.h"
#include "trace_json.h"

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

/* One state line through cp_trace_json: its ts, pid and tid as snprintf. */
static int check_line(uint64_t ns, int32_t pid, int32_t tid) {
  cp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = CP_REC_STATE;
  r.path = 9;
  r.pid = pid;
  r.start_tid = r.stop_tid = tid;
  r.start_ns = r.stop_ns = ns;
  r.event_addr = 0xc000100200000301ull;
  static char line[CP_TRACE_JSON_MAX];
  const size_t n = cp_trace_json(&r, line);
  line[n] = 0;
  char want[160];
  snprintf(want, sizeof want, ",\"ts\":%" PRIu64 ".%03u,\"name\":\"ProxyStepSendWait\",\"id\":9,\"pid\":%d,\"tid\":%d}\n",
           ns / 1000, (unsigned)(ns % 1000), (int)pid, (int)tid);
  const size_t wl = strlen(want);
  return n > wl && strcmp(line + n - wl, want) == 0 && strstr(line, "\"eventAddr\":\"0xc000100200000301\"");
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
  /* the formatter's caches: times that share their high digits, cross
   * them, jump far, or are small; threads that change or do not */
  int bl = 0;
  uint64_t t = 26429054677262ull;
  for (int i = 0; i < 200000; i++) {
    const uint64_t r = next();
    switch (r & 7) {
    case 0: t = r; break;                         /* anywhere */
    case 1: t = r % 100000000ull; break;          /* below 100 ms: no high digits */
    case 2: t += 99999000ull + (r >> 60); break;  /* across a 100 ms boundary */
    default: t += (r >> 40) & 0xFFFFF; break;     /* nearby */
    }
    const int32_t pid = (r >> 8) & 1 ? 4242 : -7, tid = (r >> 9) & 3 ? 4243 : (int32_t)(r >> 33);
    bl += !check_line(t, pid, tid);
  }
  bl += !check_line(0, 0, 0) + !check_line(UINT64_MAX, INT32_MIN, INT32_MAX) + !check_line(100000000ull, 1, 1) +
        !check_line(99999999ull, 1, 2) + !check_line(100000000000ull, 1, 2) + !check_line(100000000999ull, 1, 2);
  ok(bl == 0, "state lines: ts, pid and tid as snprintf through the formatter's caches (%d wrong)", bl);
  return done_testing();
}
