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

/* Decimal digits of v: the bit length gives log10 to within one, a table
 * of powers of ten settles it (no division per digit). */
static inline int jf_digits(uint64_t v) {
  static const uint64_t pow10[20] = {
      1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull, 100000000ull,
      1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull, 10000000000000ull,
      100000000000000ull, 1000000000000000ull, 10000000000000000ull, 100000000000000000ull,
      1000000000000000000ull, 10000000000000000000ull};
  if (v < 10) return 1;
  const int t = ((64 - __builtin_clzll(v)) * 1233) >> 12;   /* 1233 / 4096 ~ log10(2) */
  return t + (v >= pow10[t]);
}

static const char jf_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* The digits of v ending at e, two at a time; 32-bit arithmetic. */
static inline void jf_u32_back(char *e, uint32_t v) {
  while (v >= 100) {
    const uint32_t d = v % 100;
    v /= 100;
    e -= 2;
    memcpy(e, jf_pairs + 2 * d, 2);
  }
  if (v >= 10) memcpy(e - 2, jf_pairs + 2 * v, 2);
  else e[-1] = (char)('0' + v);
}

/* Exactly eight digits of v < 10^8 ending at e (leading zeros kept). */
static inline void jf_8digits_back(char *e, uint32_t v) {
  for (int i = 0; i < 4; i++) {
    const uint32_t d = v % 100;
    v /= 100;
    e -= 2;
    memcpy(e, jf_pairs + 2 * d, 2);
  }
}

static inline char *jf_u64(char *p, uint64_t v) {
  const int n = jf_digits(v);
  char *e = p + n;
  while (v >= 100000000u) {         /* eight digits at a time from the end */
    const uint64_t q = v / 100000000u;
    jf_8digits_back(e, (uint32_t)(v - q * 100000000u));
    e -= 8;
    v = q;
  }
  jf_u32_back(e, (uint32_t)v);
  return p + n;
}

static inline char *jf_i64(char *p, int64_t v) {
  if (v < 0) {
    *p++ = '-';
    return jf_u64(p, (uint64_t)0 - (uint64_t)v);
  }
  return jf_u64(p, (uint64_t)v);
}

/* Lowercase hex digits of v, no prefix, no leading zeros ("0" for 0):
 * the length from the bit length, then two digits per byte from the end. */
static inline char *jf_hexdigits(char *p, uint64_t v) {
  static const char hx2[] =
      "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
      "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
      "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
      "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
      "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
      "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
      "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
      "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
  if (v == 0) { *p = '0'; return p + 1; }
  const int n = (67 - __builtin_clzll(v)) >> 2;
  char *e = p + n;
  while (v >= 16) {
    e -= 2;
    memcpy(e, hx2 + 2 * (v & 255), 2);
    v >>= 8;
  }
  if (v) *--e = hx2[2 * v + 1];
  return p + n;
}

/* The 8 lowercase hex digits of v, most significant first, as the bytes
 * of one word in memory order: the nibbles are spread one per byte with
 * three shift-and-mask steps, then turned into '0'-'9' / 'a'-'f' all at
 * once (a nibble of 10 or more gets bit 4 when 6 is added to it). */
static inline uint64_t jf_hex8_word(uint32_t v) {
  uint64_t x = v;
  x = ((x & 0xFFFF0000ull) << 16) | (x & 0xFFFFull);
  x = ((x & 0x0000FF000000FF00ull) << 8) | (x & 0x000000FF000000FFull);
  x = ((x & 0x00F000F000F000F0ull) << 4) | (x & 0x000F000F000F000Full);
  const uint64_t letter = ((x + 0x0606060606060606ull) >> 4) & 0x0101010101010101ull;
  x += 0x3030303030303030ull + letter * ('a' - '0' - 10);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return x;
#else
  return __builtin_bswap64(x);
#endif
}

/* A pointer as a JSON string "0x7f..."; 0 as null.  Values with all 16
 * digits (collprof's handles: tag in the top nibble) take two words. */
static inline char *jf_ptr(char *p, uint64_t v) {
  if (!v) return JF_LIT(p, "null");
  p = JF_LIT(p, "\"0x");
  if (v >> 60) {
    const uint64_t hi = jf_hex8_word((uint32_t)(v >> 32)), lo = jf_hex8_word((uint32_t)v);
    memcpy(p, &hi, 8);
    memcpy(p + 8, &lo, 8);
    p += 16;
  } else {
    p = jf_hexdigits(p, v);
  }
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
