/*
 * export_folded.c — folded stacks for flame graphs (collprof-collate
 * --folded): one line per global call path, its elements root first joined
 * by ';' and its self time in ns summed over all ranks:
 *
 *   GroupApi;CollApi:AllReduce;Coll:AllReduce 123456
 *
 * flamegraph.pl, speedscope and inferno add a stack's own value to its
 * ancestors', so self time (not total) is what each line must carry; the
 * values then sum to the summary's total self time.  Paths in global id
 * order, so two exports of one run are identical.
 */
#include "export.h"
#include <inttypes.h>

int cp_export_folded(const cp_summary *s, const char *out) {
  FILE *f = cp_export_open(out);
  if (!f) return -1;
  for (size_t i = 0; i < s->npaths; i++) {
    const cp_gpath *g = &s->paths[i];
    for (const char *p = g->path; p && *p; p++) {
      /* '/' separates elements; ';' and blanks would break the format */
      int c = *p == '/' ? ';' : (*p == ';' || *p == ' ' || *p == '\t' || *p == '\n') ? '_' : *p;
      fputc(c, f);
    }
    fprintf(f, " %" PRIu64 "\n", g->s.self_ns);
  }
  return cp_export_close(f, out);
}
