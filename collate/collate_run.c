/*
 * collate_run.c — offline collation of a cp_run (collate_run.h).
 */
#include "collate_run.h"
#include "pset.h"
#include "reduce.h"
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>

int64_t cp_summary_find(const cp_summary *s, uint64_t hash, const char *path) {
  uint64_t h = cp_hash_trunc(hash, s->hash_bits);
  size_t lo = 0, hi = s->npaths;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const cp_gpath *m = &s->paths[mid];
    int c = m->hash != h ? (m->hash < h ? -1 : 1) : strcmp(m->path, path);
    if (!c) return m->id;
    if (c < 0) lo = mid + 1; else hi = mid;
  }
  return -1;
}

int cp_collate_run(cp_run *run, int hash_bits, cp_summary *out) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  memset(out, 0, sizeof *out);
  size_t n = run->nranks;
  cp_pbuf *sets = calloc(n + 1, sizeof *sets);
  uint32_t **l2i = calloc(n + 1, sizeof *l2i), **maps = calloc(n + 1, sizeof *maps);
  int rc = sets && l2i && maps ? 0 : -1;
  /* every rank's set, then one k-way merge straight into the summary */
  for (size_t i = 0; i < n && !rc; i++) {
    const cp_rank_data *r = &run->ranks[i];
    l2i[i] = malloc((r->npaths + 1) * sizeof **l2i);
    uint64_t np = 0;
    if (!l2i[i] || cp_pset_from_rank(r, hash_bits, &sets[i], l2i[i]) != 0 ||
        cp_pset_count(sets[i].p, sets[i].len, &np, NULL) != 0 || !(maps[i] = malloc((np + 1) * sizeof **maps)))
      rc = -1;
  }
  if (!rc) {
    int world = (int)n;
    for (size_t i = 0; i < n; i++)
      if (run->ranks[i].world_size > world) world = run->ranks[i].world_size;
    cp_summary_config(out, n ? &run->ranks[0] : NULL, world, hash_bits);
    uint64_t bytes = 0;
    rc = cp_pset_merge(sets, n, maps, NULL, 0, out, &bytes, NULL);
    cp_summary_finish(out);
    out->coll.global_set_bytes = bytes;
    for (size_t i = 0; i < n && !rc; i++)
      for (size_t j = 0; j < run->ranks[i].npaths; j++) {
        uint32_t g = maps[i][l2i[i][j]];
        run->ranks[i].paths[j].id = g == UINT32_MAX ? -1 : (int64_t)g;
      }
  }
  for (size_t i = 0; i < n; i++) {
    if (sets) cp_pbuf_free(&sets[i]);
    if (l2i) free(l2i[i]);
    if (maps) free(maps[i]);
  }
  free(sets); free(l2i); free(maps);
  if (rc) { cp_summary_free(out); return -1; }
  if (run->dir) snprintf(out->outdir, sizeof out->outdir, "%s", run->dir);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  out->coll.online = 0;
  out->coll.nranks = (int)n;
  out->coll.wall_ns = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
  out->coll.max_recv_rank = -1;
  return 0;
}
