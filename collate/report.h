/*
 * report.h — the writers of the run's reports, from a cp_summary
 * (rundata.h) only, so the online (MPI) and offline (collprof-collate)
 * paths print the same bytes for the same numbers.
 *
 *   summary.log   Vftrace-style plain text (summary_log.c): header, run
 *                 summary, communicators, runtime profile (sorted by total
 *                 time), min/max across ranks, by type:func, global paths,
 *                 configuration, collation.
 *   summary.json  the same numbers, machine-readable (summary_json.c).
 *   rank<R>.log   one rank's profile in the global ID space (rank_log.c).
 *
 * Each returns 0 on success, -1 after one "collprof:" line on stderr.
 */
#ifndef COLLPROF_REPORT_H
#define COLLPROF_REPORT_H
#include <stdio.h>
#include "rundata.h"

int cp_write_summary_log(const cp_summary *s, const char *path);
int cp_write_summary_json(const cp_summary *s, const char *path);
/* Paths' global ids are r->paths[i].id (-1: not collated). */
int cp_write_rank_log(const cp_rank_data *r, const char *path);

/* Why a communicator of one rank has no events (src/plugin.c, init_common
 * says it at run time): summary.log, summary.json and the HTML report. */
#define CP_ONE_RANK_WHY "one rank: NCCL sends no profiler event for its calls"

/* Write both summaries into dir; prints nothing on success. */
int cp_write_summaries(const cp_summary *s, const char *dir);

/* JSON string literal of s (quotes included) on f. */
void cp_json_str(FILE *f, const char *s);
/* ISO 8601 UTC, seconds ("2025-01-31T12:00:00Z"); "" for 0. */
void cp_iso_time(int64_t wall_ns, char *buf, size_t len);

/* COLLPROF_RANK_LOGS: "all", "none" (default) or a list "0,3-5".
 * Whether rank r writes rank<r>.log. */
int cp_rank_log_wanted(const char *spec, int rank);

#endif
