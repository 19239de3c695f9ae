/*
 * meta.h — the first line of every trace file ({"recordType":"meta",...})
 * and the process facts it shares with the rank summary (host, command).
 *
 * Owned by meta.c.  cp_meta_init() takes the wall-clock/monotonic pair and
 * formats the line once (at trace start), so the line can later be written
 * from a signal handler without formatting anything.
 */
#ifndef COLLPROF_META_H
#define COLLPROF_META_H
#include <stddef.h>
#include <stdint.h>

/* Compute the meta line (idempotent; the first call wins). */
void cp_meta_init(void);

/* The meta line, ending in '\n'; *len gets its length.  "" before init. */
const char *cp_meta_line(size_t *len);

/* argv joined by spaces, from /proc/self/cmdline (raw, not escaped). */
const char *cp_meta_command(void);

/* gethostname(), "" when unknown. */
const char *cp_meta_host(void);

/* ISO 8601 UTC with microseconds, "2025-01-31T12:34:56.123456Z". */
void cp_iso8601(int64_t wall_ns, char *buf, size_t cap);

#endif
