/*
 * json_escape.h — JSON string escaping for everything collprof writes.
 *
 * Owned by json_escape.c.  Strings come from NCCL, the command line and the
 * environment, so they may hold quotes, control characters or bytes that
 * are not UTF-8; every line must still parse.  Escaping: `"` and `\` get a
 * backslash; \b \f \n \r \t their short forms; other bytes below 0x20 and
 * 0x7f become \u00XX; valid UTF-8 is copied as is; each maximal invalid
 * subsequence (Unicode's "maximal subpart" rule, the one Python and
 * browsers use) becomes one \ufffd.  Pure functions: async-signal-safe.
 */
#ifndef COLLPROF_JSON_ESCAPE_H
#define COLLPROF_JSON_ESCAPE_H
#include <stddef.h>

/* Worst-case growth: one input byte becomes at most 6 output bytes. */
#define CP_JSON_ESCAPE_MAX(n) ((n) * 6)

/* Escape len bytes of s (no quotes added) into dst, writing at most cap
 * bytes and never part of an escape or of a UTF-8 character: input that
 * does not fit is dropped.  Returns the bytes written (no NUL added). */
size_t cp_json_escape(char *dst, size_t cap, const char *s, size_t len);

/* The same for a NUL-terminated string; NULL is "". */
size_t cp_json_escape_str(char *dst, size_t cap, const char *s);

#endif
