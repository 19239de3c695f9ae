/*
 * export_util.c — small helpers shared by the exporters (export.h): output
 * files, global ids of a rank's paths, microsecond formatting.
 */
#include "export.h"
#include "collate_run.h"
#include <errno.h>
#include <inttypes.h>
#include <string.h>

FILE *cp_export_open(const char *out) {
  if (!out || !strcmp(out, "-")) return stdout;
  FILE *f = fopen(out, "w");
  if (!f) fprintf(stderr, "collprof: cannot write %s: %s\n", out, strerror(errno));
  return f;
}

int cp_export_close(FILE *f, const char *out) {
  int bad = ferror(f) != 0;
  if (f == stdout) bad |= fflush(f) != 0;
  else bad |= fclose(f) != 0;
  if (bad) fprintf(stderr, "collprof: error writing %s\n", out && strcmp(out, "-") ? out : "stdout");
  return bad ? -1 : 0;
}

int64_t cp_export_global_id(const cp_summary *s, const cp_path_rec *p) {
  if (p->id >= 0) return p->id;
  if (!s || !s->npaths || !p->path) return -1;
  return cp_summary_find(s, p->hash, p->path);
}

const cp_gpath *cp_export_gpath(const cp_summary *s, int64_t id) {
  if (!s || id < 0 || (uint64_t)id >= s->npaths) return NULL;
  const cp_gpath *g = &s->paths[id];
  return g->id == id ? g : NULL;
}

const char *cp_export_us(int64_t ns, char *buf, size_t len) {
  uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
  snprintf(buf, len, "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", a / 1000, (unsigned)(a % 1000));
  return buf;
}
