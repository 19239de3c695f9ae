/*
 * json_escape.c — JSON string escaping (see json_escape.h for the rules).
 *
 * Runs on the trace writer thread for every string of every record, and in
 * the SIGTERM flush, so: no libc but memcpy, a fast path for plain
 * ASCII, and a bounded output that never ends inside an escape.
 */
#include "json_escape.h"
#include <stdint.h>
#include <string.h>

#pragma GCC visibility push(hidden)

static const char hexd[] = "0123456789abcdef";

/* Printable ASCII other than '"' and '\\': copied as is. */
static inline int is_plain(unsigned c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; }

/* Length of the valid UTF-8 character at s[0..len), or 0 when the bytes
 * there are invalid; then *bad gets the length of the maximal invalid
 * subpart to replace with one U+FFFD. */
static size_t utf8_char(const unsigned char *s, size_t len, size_t *bad) {
  unsigned c = s[0];
  size_t need;
  unsigned lo = 0x80, hi = 0xbf;   /* allowed range of the second byte */
  if (c >= 0xc2 && c <= 0xdf) need = 2;
  else if (c >= 0xe0 && c <= 0xef) {
    need = 3;
    if (c == 0xe0) lo = 0xa0;        /* no overlongs */
    if (c == 0xed) hi = 0x9f;        /* no surrogates */
  } else if (c >= 0xf0 && c <= 0xf4) {
    need = 4;
    if (c == 0xf0) lo = 0x90;        /* no overlongs */
    if (c == 0xf4) hi = 0x8f;        /* nothing above U+10FFFF */
  } else {                           /* 80..c1 or f5..ff: never a lead byte */
    *bad = 1;
    return 0;
  }
  size_t i = 1;
  for (; i < need; i++) {
    if (i >= len) break;
    unsigned b = s[i];
    unsigned l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xbf;
    if (b < l || b > h) break;
  }
  if (i == need) return need;
  *bad = i;                          /* lead plus the continuations that fitted */
  return 0;
}

size_t cp_json_escape(char *dst, size_t cap, const char *src, size_t len) {
  const unsigned char *s = (const unsigned char *)src;
  size_t o = 0, i = 0;
  if (!s) return 0;
  while (i < len) {
    /* A run of plain characters, copied at once. */
    size_t j = i;
    while (j < len && is_plain(s[j])) j++;
    if (j > i) {
      size_t n = j - i;
      if (n > cap - o) n = cap - o;
      memcpy(dst + o, s + i, n);
      o += n;
      i += n;
      if (i < j) break;            /* out of room */
      continue;
    }
    unsigned c = s[i];
    if (c < 0x80) {                   /* needs an escape */
      char e = 0;
      switch (c) {
      case '"': e = '"'; break;
      case '\\': e = '\\'; break;
      case '\b': e = 'b'; break;
      case '\f': e = 'f'; break;
      case '\n': e = 'n'; break;
      case '\r': e = 'r'; break;
      case '\t': e = 't'; break;
      default: break;
      }
      if (e) {
        if (cap - o < 2) break;
        dst[o++] = '\\';
        dst[o++] = e;
      } else {
        if (cap - o < 6) break;
        memcpy(dst + o, "\\u00", 4);
        dst[o + 4] = hexd[c >> 4];
        dst[o + 5] = hexd[c & 15];
        o += 6;
      }
      i++;
      continue;
    }
    size_t bad = 0, n = utf8_char(s + i, len - i, &bad);
    if (n) {
      if (cap - o < n) break;
      memcpy(dst + o, s + i, n);
      o += n;
      i += n;
    } else {
      if (cap - o < 6) break;
      memcpy(dst + o, "\\ufffd", 6);
      o += 6;
      i += bad;
    }
  }
  return o;
}

size_t cp_json_escape_str(char *dst, size_t cap, const char *s) {
  return s ? cp_json_escape(dst, cap, s, strlen(s)) : 0;
}

#pragma GCC visibility pop
