/*
 * collate_run.c — offline collation of a cp_run (collate_run.h).
 */
#include "collate_run.h"
#include "merge.h"
#include "reduce.h"
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <time.h>

int64_t cp_summary_find(const cp_summary *s, uint64_t hash, const char *path) {
  cp_mpath key = {0};
  key.hash = cp_hash_trunc(hash, s->hash_bits);
  key.path = path; key.plen = (uint32_t)strlen(path);
  size_t lo = 0, hi = s->npaths;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    cp_mpath m = {0};
    m.hash = s->paths[mid].hash; m.path = s->paths[mid].path; m.plen = (uint32_t)strlen(m.path);
    int c = cp_mpath_cmp(&m, &key);
    if (!c) return s->paths[mid].id;
    if (c < 0) lo = mid + 1; else hi = mid;
  }
  return -1;
}

int cp_collate_run(cp_run *run, int hash_bits, cp_summary *out) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  size_t n = run->nranks;
  cp_mset *sets = calloc(n + 1, sizeof *sets);
  if (!sets) return -1;
  int rc = 0;
  for (size_t i = 0; i < n && !rc; i++)
    rc = cp_mset_from_rank(&run->ranks[i], hash_bits, &sets[i], NULL);
  /* pairwise, like the MPI tree, so no step costs more than the output */
  for (size_t step = 1; step < n && !rc; step *= 2)
    for (size_t i = 0; i + step < n && !rc; i += 2 * step) {
      cp_mset m;
      rc = cp_mset_merge(&sets[i], &sets[i + step], &m, NULL, NULL);
      if (rc) break;
      cp_mset_free(&sets[i]); cp_mset_free(&sets[i + step]);
      sets[i] = m;
    }
  if (!rc) {
    int world = (int)n;
    for (size_t i = 0; i < n; i++) {
      if (run->ranks[i].world_size > world) world = run->ranks[i].world_size;
    }
    cp_mset empty = {0};
    cp_agg_init(&empty.agg);
    rc = cp_summary_build(n ? &sets[0] : &empty, n ? &run->ranks[0] : NULL, world, hash_bits, out);
  }
  for (size_t i = 0; i < n; i++) cp_mset_free(&sets[i]);
  free(sets);
  if (rc) return -1;
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < run->ranks[i].npaths; j++) {
      cp_path_rec *p = &run->ranks[i].paths[j];
      p->id = cp_summary_find(out, p->hash, p->path);
    }
  if (run->dir) snprintf(out->outdir, sizeof out->outdir, "%s", run->dir);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  out->coll.online = 0;
  out->coll.nranks = (int)n;
  out->coll.wall_ns = (uint64_t)((t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec));
  out->coll.max_recv_rank = -1;
  return 0;
}
