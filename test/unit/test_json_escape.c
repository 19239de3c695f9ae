/*
 * test_json_escape.c — JSON escaping (src/json_escape.c).
 *
 * Fixed cases for each rule, bounded output never splitting an escape or a
 * UTF-8 character, and a fuzz run checked by python3 as the independent
 * oracle: every escaped string must parse as JSON and decode to exactly
 * bytes.decode('utf-8', 'replace') of the input (Unicode's maximal-subpart
 * replacement, which the escaper implements on its own).
 */
#include "json_escape.h"
#include "h2_testlib.h"

#include <stdint.h>

static int esc_is(const char *in, size_t len, const char *want, const char *name) {
  char out[512];
  size_t n = cp_json_escape(out, sizeof out, in, len);
  out[n] = 0;
  int good = strcmp(out, want) == 0;
  ok(good, "%s", name);
  if (!good) diag("got '%s' want '%s'", out, want);
  return good;
}
#define ESC(lit, want, name) esc_is(lit, sizeof(lit) - 1, want, name)

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

int main(void) {
  ESC("hello", "hello", "plain ASCII unchanged");
  ESC("a\"b\\c", "a\\\"b\\\\c", "quote and backslash");
  ESC("\b\f\n\r\t", "\\b\\f\\n\\r\\t", "short escapes");
  ESC("\x01\x1f\x7f", "\\u0001\\u001f\\u007f", "other control characters as \\u00XX");
  esc_is("a\0b", 3, "a\\u0000b", "NUL inside the length");
  ESC("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80",
      "valid 2-, 3- and 4-byte UTF-8 copied");
  ESC("\xff", "\\ufffd", "invalid byte replaced");
  ESC("\xe2\x82", "\\ufffd", "truncated sequence is one replacement");
  ESC("\xe2\x82x", "\\ufffdx", "truncated sequence then ASCII");
  ESC("\xed\xa0\x80", "\\ufffd\\ufffd\\ufffd", "surrogate: one replacement per byte");
  ESC("\xc0\xaf", "\\ufffd\\ufffd", "overlong rejected");
  ESC("\xf4\x90\x80\x80", "\\ufffd\\ufffd\\ufffd\\ufffd", "above U+10FFFF rejected");
  ESC("\x80", "\\ufffd", "stray continuation byte");

  char out[16];
  size_t n = cp_json_escape(out, 3, "ab\n", 3);
  ok(n == 2 && memcmp(out, "ab", 2) == 0, "bounded: an escape that does not fit is dropped whole");
  n = cp_json_escape(out, 5, "a\x01", 2);
  ok(n == 1, "bounded: \\u00XX needs 6 bytes");
  n = cp_json_escape(out, 3, "a\xe2\x82\xac", 4);
  ok(n == 1, "bounded: a UTF-8 character is never split");
  ok(cp_json_escape_str(out, sizeof out, NULL) == 0, "NULL string is empty");

  /* Fuzz with python3 as the oracle. */
  if (!have_python()) {
    printf("ok %d # SKIP python3 not available\n", ++t_n);
    return done_testing();
  }
  char dir[256];
  make_tmpdir(dir, sizeof dir);
  char path[300];
  snprintf(path, sizeof path, "%s/fuzz.jsonl", dir);
  FILE *f = fopen(path, "w");
  static const unsigned char alphabet[] = {'a', '"', '\\', '\n', 0x01, 0x7f, 0x80, 0xbf, 0xc2, 0xc3,
                                           0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, 0xa0, 0x9f, 0x90};
  int cases = 3000;
  for (int c = 0; c < cases; c++) {
    unsigned char raw[64];
    size_t len = next() % sizeof raw;
    for (size_t i = 0; i < len; i++)
      raw[i] = next() % 3 ? alphabet[next() % sizeof alphabet] : (unsigned char)next();
    char esc[CP_JSON_ESCAPE_MAX(64) + 1];
    size_t m = cp_json_escape(esc, sizeof esc, (const char *)raw, len);
    fprintf(f, "{\"s\":\"%.*s\",\"h\":\"", (int)m, esc);
    for (size_t i = 0; i < len; i++) fprintf(f, "%02x", raw[i]);
    fprintf(f, "\"}\n");
  }
  fclose(f);
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "python3 -c 'import json,sys\n"
           "bad=0\n"
           "n=0\n"
           "for l in open(sys.argv[1],\"rb\"):\n"
           "  n+=1\n"
           "  d=json.loads(l.decode(\"utf-8\"))\n"
           "  if d[\"s\"]!=bytes.fromhex(d[\"h\"]).decode(\"utf-8\",\"replace\"): bad+=1\n"
           "sys.exit(0 if bad==0 and n==%d else 1)' '%s'",
           cases, path);
  ok(system(cmd) == 0, "%d random strings: each line parses and decodes like Python's 'replace'",
     cases);
  rm_rf(dir);
  return done_testing();
}
