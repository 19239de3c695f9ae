/*
 * rank_log.c — rank<R>.log: one rank's own profile, with the global IDs of
 * the run (report.h), and the COLLPROF_RANK_LOGS selection.
 */
#include "report.h"
#include "collprof.h"
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int cp_rank_log_wanted(const char *spec, int rank) {
  if (!spec || !*spec || !strcmp(spec, "none")) return 0;
  if (!strcmp(spec, "all")) return 1;
  const char *p = spec;
  while (*p) {
    char *end;
    long a = strtol(p, &end, 10), b;
    if (end == p) return 0;                 /* malformed: caller warned once */
    b = a;
    p = end;
    if (*p == '-') { b = strtol(p + 1, &end, 10); if (end == p + 1) return 0; p = end; }
    if (rank >= a && rank <= b) return 1;
    if (*p == ',') p++; else if (*p) return 0;
  }
  return 0;
}

static int by_total(const void *x, const void *y, void *ctx) {
  const cp_rank_data *r = ctx;
  const cp_path_rec *a = &r->paths[*(const size_t *)x], *b = &r->paths[*(const size_t *)y];
  if (a->total_ns != b->total_ns) return a->total_ns > b->total_ns ? -1 : 1;
  return a->id < b->id ? -1 : a->id > b->id;
}

int cp_write_rank_log(const cp_rank_data *r, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) { fprintf(stderr, "collprof: cannot write %s: %s\n", path, strerror(errno)); return -1; }
  uint64_t self_total = 0;
  int pw = 4;
  for (size_t i = 0; i < r->npaths; i++) {
    self_total += r->paths[i].self_ns;
    int l = (int)strlen(r->paths[i].path); if (l > pw) pw = l;
  }
  fprintf(f, "collprof %s - profile of rank %d (pid %d on %s)\n\n", COLLPROF_VERSION, r->rank, r->pid,
          r->host);
  fprintf(f, "Runtime [s]:      %.6f\n", r->end_ns > r->start_ns ? (double)(r->end_ns - r->start_ns) / 1e9 : 0.0);
  fprintf(f, "Events recorded:  %" PRIu64 "\n", r->events_recorded);
  if (r->events_counted) fprintf(f, "Events counted:   %" PRIu64 " (only counted: host sampling)\n", r->events_counted);
  if (r->mask_frozen[0]) fprintf(f, "Event mask frozen: %s\n", r->mask_frozen);
  if (r->has_clock)
    fprintf(f, "Clock offset:     %" PRId64 " ns to rank 0 (round trip %" PRId64 " ns)\n",
            r->clock_offset_ns, r->clock_rtt_ns);
  fprintf(f, "\nRuntime profile (this rank; IDs are the run's global IDs)\n");
  int lw = fprintf(f, "%12s | %12s | %12s | %7s | %12s | %12s | %12s | %14s | %-*s | %s\n", "Calls",
                   "Total[s]", "Self[s]", "Self[%]", "Avg/call[us]", "Min[us]", "Max[us]", "Bytes", pw,
                   "Path", "ID");
  for (int i = 0; i < lw - 1; i++) fputc('-', f);
  fputc('\n', f);
  size_t *o = malloc((r->npaths + 1) * sizeof *o);
  for (size_t i = 0; o && i < r->npaths; i++) o[i] = i;
  if (o) qsort_r(o, r->npaths, sizeof *o, by_total, (void *)r);
  for (size_t k = 0; o && k < r->npaths; k++) {
    const cp_path_rec *p = &r->paths[o[k]];
    fprintf(f, "%12" PRIu64 " | %12.6f | %12.6f | %7.2f | %12.3f | %12.3f | %12.3f | %14" PRIu64
               " | %-*s | %" PRId64 "\n",
            p->calls, (double)p->total_ns / 1e9, (double)p->self_ns / 1e9,
            self_total ? 100.0 * (double)p->self_ns / (double)self_total : 0.0,
            p->calls ? (double)p->total_ns / (double)p->calls / 1e3 : 0.0, (double)p->min_ns / 1e3,
            (double)p->max_ns / 1e3, p->bytes, pw, p->path, p->id);
  }
  free(o);
  int bad = ferror(f);
  if (fclose(f) || bad) { fprintf(stderr, "collprof: error writing %s\n", path); return -1; }
  return 0;
}
