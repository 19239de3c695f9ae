/*
 * rankfile_read.h — reading the per-rank JSONL files of one output folder
 * (format: shared/docs/trace-format.md and the tail records of the team
 * brief) into the run model (rundata.h), with Jansson.
 *
 * Two uses:
 *   - collprof-collate reads only the tail records (path, rank, clock) of
 *     every file: cp_run_read().  Event and state lines are skipped without
 *     parsing (they are checked to be whole lines: a line that does not end
 *     in '}' is reported as truncated).
 *   - the exporters (collate/export_*.c) stream every record of one file:
 *     cp_rankfile_stream(), after cp_run_read() gave them ranks and clock
 *     offsets.
 * A malformed or truncated line gives one message "collprof: FILE:LINE:
 * ..." on stderr (at most 10 per file, then a count) and reading goes on.
 */
#ifndef COLLPROF_RANKFILE_READ_H
#define COLLPROF_RANKFILE_READ_H
#include <jansson.h>
#include "rundata.h"

/* Read the tail records of one file into *out (zeroed first).  A rank
 * record, when there are several tail blocks, ends one: the last complete
 * block wins.  Returns 0 (even with malformed lines: see *bad_lines),
 * -1 when the file cannot be opened. */
int cp_rankfile_read(const char *file, cp_rank_data *out, size_t *bad_lines);

/* Every file of dir: rank<R>.jsonl when any exist, else pid<PID>.jsonl.
 * Ranks come from the rank records; files without one (rank -1, pid files)
 * get rank numbers after the highest known one, in file-name order.
 * Sorted by rank.  Returns the number of files read, -1 when dir cannot
 * be listed; 0 files is not an error here. */
int cp_run_read(const char *dir, cp_run *run);

/* Stream every parsed record of a file to cb (recordType in type, the
 * parsed object in rec, valid during the call; line numbers from 1).
 * cb returns non-zero to stop.  Returns 0, -1 when the file cannot be
 * opened, or what cb returned. */
typedef int (*cp_record_cb)(void *ctx, const char *type, json_t *rec, long line);
int cp_rankfile_stream(const char *file, cp_record_cb cb, void *ctx);

/* Helpers for readers of records: integer field (0 when missing), uint64
 * from a decimal or "0x" hex string or a number. */
int64_t cp_json_i64(json_t *o, const char *key);
uint64_t cp_json_u64str(json_t *o, const char *key);

#endif
