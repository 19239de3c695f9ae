/*
 * jfmt.h — hand-written number and string formatting for JSON lines.
 *
 * Used by trace_json.c (the trace writer formats millions of records per
 * second: snprintf per field would not keep up) and by meta.c.  Every
 * function appends at p and returns the new end; the caller guarantees
 * room (numbers need at most 24 bytes, strings their stated bound).  No
 * locale, no libc state: async-signal-safe.
 */
#ifndef COLLPROF_JFMT_H
#define COLLPROF_JFMT_H
#include <stdint.h>
#include <string.h>
#include "json_escape.h"

/* A string literal, copied with its length known at compile time. */
#define JF_LIT(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) + sizeof(lit) - 1)

static inline char *jf_u64(char *p, uint64_t v) {
  static const char pairs[] =
      "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
      "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
      "8081828384858687888990919293949596979899";
  int n = 1;                       /* digits */
  for (uint64_t t = v; t >= 10; t /= 10) n++;
  char *e = p + n;
  while (v >= 100) {
    unsigned d = (unsigned)(v % 100);
    v /= 100;
    e -= 2;
    e[0] = pairs[2 * d];
    e[1] = pairs[2 * d + 1];
  }
  if (v >= 10) {
    e -= 2;
    e[0] = pairs[2 * v];
    e[1] = pairs[2 * v + 1];
  } else {
    *--e = (char)('0' + v);
  }
  return p + n;
}

static inline char *jf_i64(char *p, int64_t v) {
  if (v < 0) {
    *p++ = '-';
    return jf_u64(p, (uint64_t)0 - (uint64_t)v);
  }
  return jf_u64(p, (uint64_t)v);
}

/* Lowercase hex digits of v, no prefix, no leading zeros ("0" for 0). */
static inline char *jf_hexdigits(char *p, uint64_t v) {
  static const char hx[] = "0123456789abcdef";
  char tmp[16];
  int n = 0;
  do {
    tmp[n++] = hx[v & 15];
    v >>= 4;
  } while (v);
  while (n) *p++ = tmp[--n];
  return p;
}

/* A pointer as a JSON string "0x7f..."; 0 as null. */
static inline char *jf_ptr(char *p, uint64_t v) {
  if (!v) return JF_LIT(p, "null");
  p = JF_LIT(p, "\"0x");
  p = jf_hexdigits(p, v);
  *p++ = '"';
  return p;
}

/* Nanoseconds as microseconds with three decimals: 1234567 -> 1234.567. */
static inline char *jf_us3(char *p, uint64_t ns) {
  p = jf_u64(p, ns / 1000);
  unsigned f = (unsigned)(ns % 1000);
  p[0] = '.';
  p[1] = (char)('0' + f / 100);
  p[2] = (char)('0' + f / 10 % 10);
  p[3] = (char)('0' + f % 10);
  return p + 4;
}

/* A JSON string of at most `max` escaped bytes (plus the two quotes). */
static inline char *jf_str(char *p, const char *s, size_t max) {
  *p++ = '"';
  p += cp_json_escape_str(p, max, s);
  *p++ = '"';
  return p;
}

static inline char *jf_bool(char *p, int v) {
  return v ? JF_LIT(p, "true") : JF_LIT(p, "false");
}

#endif
