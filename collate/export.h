/*
 * export.h — views of a collated run for other tools, written by
 * collprof-collate (--chrome, --folded, --html, --sizes).  MPI-free; inputs are the
 * run as the reader loaded it (cp_run: each rank's tail records and its
 * file name) and the summary built from it (cp_summary), rundata.h.
 *
 *   export_chrome.c  one Chrome trace-event JSON file for all ranks
 *                    (Perfetto UI, chrome://tracing): re-reads every rank
 *                    file's event and state records, puts them on rank 0's
 *                    clock with each rank's clock record, KernelCh on GPU
 *                    tracks at their GPU times
 *   export_folded.c  folded stacks "A;B;C <self ns>" (flamegraph.pl,
 *                    speedscope, inferno)
 *   export_html.c    one self-contained HTML report with inline SVG charts
 *   export_sizes.c   the Coll/P2p paths per message-size class over all
 *                    ranks: calls, GPU time per call, bandwidth (text)
 *
 * Each returns 0 on success, or -1 after one "collprof:" line on stderr
 * naming the file.  A file name "-" means standard output.  Damaged lines
 * in rank files are reported (file:line) and skipped, never fatal.
 */
#ifndef COLLPROF_EXPORT_H
#define COLLPROF_EXPORT_H
#include <stdio.h>
#include "rundata.h"

/* s may be NULL: then paths that have no global id in the rank files get
 * none in the export either. */
int cp_export_chrome(const cp_run *run, const cp_summary *s, const char *out);
int cp_export_folded(const cp_summary *s, const char *out);
/* top: how many paths the table and the charts show (0: 10). */
int cp_export_html(const cp_run *run, const cp_summary *s, const char *out, size_t top);
/* The summary's message-size classes (cp_summary_sizes). */
int cp_export_sizes(const cp_summary *s, const char *out);

/* ---- message sizes (export_sizes.c), for --sizes and the HTML report ---- */

/* Class k's numbers as shown: its smallest size, GPU ns, a typical call's
 * GPU ns, algorithm and bus bandwidth in GB/s (each -1 where unknown). */
typedef struct cp_size_row { uint64_t lo; double gpu_ns, call_ns, algbw, busbw; } cp_size_row;
void cp_size_row_of(const cp_summary *s, const cp_gpath *g, unsigned k, const cp_size_sum *c, cp_size_row *r);
/* "64 KiB" (a whole unit), "unsized" for 0. */
void cp_size_text(uint64_t lo, char *b, size_t n);
/* Path g's classes c (cp_summary_sizes): as a text table (a heading line
 * with its id and path, then one row per class), and as a JSON array of
 * one object per class; the legend of the text's columns. */
void cp_size_table(FILE *f, const cp_summary *s, const cp_gpath *g, const cp_size_sum *c);
void cp_size_json(FILE *f, const cp_summary *s, const cp_gpath *g, const cp_size_sum *c);
void cp_size_legend(FILE *f, const cp_summary *s);
/* Indices into s->sized, the paths with the most GPU time (the summary's
 * estimate) first, ties by id; NULL when there are none or no memory.
 * free() it. */
size_t *cp_sized_by_gpu(const cp_summary *s);

/* ---- shared by the exporters (export_util.c) ---- */

/* Open out for writing ("-" = stdout); NULL after a message. */
FILE *cp_export_open(const char *out);
/* Close (not stdout), reporting write errors; 0 on success. */
int cp_export_close(FILE *f, const char *out);

/* Global id of a rank's path record: its own id when collated, else the
 * summary path with the same hash and string; -1 when unknown. */
int64_t cp_export_global_id(const cp_summary *s, const cp_path_rec *p);

/* Index of the summary path with id `id` (ids are indices; checked). */
const cp_gpath *cp_export_gpath(const cp_summary *s, int64_t id);

/* a + b, held at INT64_MIN / INT64_MAX where it would overflow: times
 * from a damaged rank file (a hand-edited or cut line) must not make the
 * exporters' arithmetic undefined. */
static inline int64_t cp_add_sat(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}
static inline int64_t cp_sub_sat(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_sub_overflow(a, b, &r) ? (b < 0 ? INT64_MAX : INT64_MIN) : r;
}

/* ns as microseconds with three decimals ("-12.345"), into buf. */
const char *cp_export_us(int64_t ns, char *buf, size_t len);

#endif
