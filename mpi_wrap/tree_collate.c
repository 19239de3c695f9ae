/*
 * tree_collate.c — binomial-tree merge of call-path sets over MPI
 * (tree_collate.h).  All MPI calls are PMPI_ so the application's own
 * profiling layers do not see ours.
 */
#include "tree_collate.h"
#include "merge.h"
#include "reduce.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_UP 0x4350
#define TAG_DOWN 0x4351

typedef struct step {
  int child;                 /* rank we received from */
  unsigned char *buf;        /* its packed set (our strings may point here) */
  uint32_t *prevmap;         /* our set before the merge -> after */
  uint32_t *childmap;        /* child's set -> after */
  size_t prevn, childn;
} step;

/* Wait for a message without spinning: ranks are often oversubscribed at
 * finalize (and always in tests), and a rank that busy-polls steals the
 * core its sender needs.  Back off from 2 us to 256 us between probes. */
static void wait_probe(int src, int tag, MPI_Comm comm, MPI_Status *st) {
  int flag = 0;
  long ns = 2000;
  for (;;) {
    PMPI_Iprobe(src, tag, comm, &flag, st);
    if (flag) return;
    struct timespec ts = {0, ns};
    nanosleep(&ts, NULL);
    if (ns < 256000) ns *= 2;
  }
}

static void empty_set(cp_mset *m) { memset(m, 0, sizeof *m); cp_agg_init(&m->agg); }

int cp_tree_collate(MPI_Comm comm, const cp_rank_data *mine, int hash_bits,
                    int64_t *gids, cp_summary *out, cp_tree_info *info) {
  int rank, P, rc = 0;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &P);
  int R = 0;
  while ((1 << R) < P) R++;
  memset(info, 0, sizeof *info);
  info->rounds = R;
  PMPI_Barrier(comm);
  double t0 = PMPI_Wtime();

  uint32_t *l2i = calloc(mine->npaths + 1, sizeof *l2i);
  cp_mset cur;
  if (!l2i || cp_mset_from_rank(mine, hash_bits, &cur, l2i) != 0) {
    fprintf(stderr, "collprof: rank %d: out of memory for collation; its paths are left out\n", rank);
    empty_set(&cur);
    rc = -1;
  }
  step steps[32];
  int nsteps = 0, parent = -1;
  unsigned char *sent_buf = NULL;

  /* ---- up ---- */
  for (int k = 0; k < R; k++) {
    int mask = 1 << k;
    if (rank & mask) {
      parent = rank - mask;
      size_t len = 0;
      if (cp_mset_pack(&cur, &sent_buf, &len) != 0) {
        /* cannot pack: send an empty set so the parent is not kept waiting */
        cp_mset_free(&cur); empty_set(&cur);
        cp_mset_pack(&cur, &sent_buf, &len);
        rc = -1;
      }
      PMPI_Send(sent_buf, (int)len, MPI_BYTE, parent, TAG_UP, comm);
      info->bytes_sent += len;
      free(sent_buf); sent_buf = NULL;
      break;
    }
    if (rank + mask >= P) continue;
    step *s = &steps[nsteps++];
    memset(s, 0, sizeof *s);
    s->child = rank + mask;
    MPI_Status st;
    int count = 0;
    wait_probe(s->child, TAG_UP, comm, &st);
    PMPI_Get_count(&st, MPI_BYTE, &count);
    s->buf = malloc(count ? (size_t)count : 1);
    PMPI_Recv(s->buf, count, MPI_BYTE, s->child, TAG_UP, comm, MPI_STATUS_IGNORE);
    info->bytes_recv += (uint64_t)count;
    cp_mset child, merged;
    if (!s->buf || cp_mset_unpack(s->buf, (size_t)count, &child) != 0) {
      fprintf(stderr, "collprof: rank %d: bad collation message from rank %d\n", rank, s->child);
      empty_set(&child);
      rc = -1;
    }
    s->prevn = cur.npaths; s->childn = child.npaths;
    s->prevmap = malloc((cur.npaths + 1) * sizeof *s->prevmap);
    s->childmap = malloc((child.npaths + 1) * sizeof *s->childmap);
    if (!s->prevmap || !s->childmap ||
        cp_mset_merge(&cur, &child, &merged, s->prevmap, s->childmap) != 0) {
      fprintf(stderr, "collprof: rank %d: out of memory merging rank %d's paths\n", rank, s->child);
      for (size_t i = 0; s->prevmap && i < cur.npaths; i++) s->prevmap[i] = (uint32_t)i;
      free(s->childmap); s->childmap = NULL;
      cp_mset_free(&child);
      rc = -1;
      continue;
    }
    cp_mset_free(&child);
    cp_mset_free(&cur);
    cur = merged;
  }

  /* ---- root: the global set ---- */
  size_t n = cur.npaths;
  int64_t *ids = malloc((n + 1) * sizeof *ids);
  if (rank == 0) {
    for (size_t i = 0; ids && i < n; i++) ids[i] = (int64_t)i;
    if (out) {
      if (cp_summary_build(&cur, mine, P, hash_bits, out) != 0) rc = -1;
      else out->coll.global_set_bytes = cp_mset_packed_size(&cur);
    }
  }
  cp_mset_free(&cur);
  for (int s = 0; s < nsteps; s++) { free(steps[s].buf); steps[s].buf = NULL; }

  /* ---- down ---- */
  if (parent >= 0) {
    MPI_Status st;
    int count = 0;
    wait_probe(parent, TAG_DOWN, comm, &st);
    PMPI_Get_count(&st, MPI_INT64_T, &count);
    int64_t *got = malloc(((size_t)count + 1) * sizeof *got);
    PMPI_Recv(got, count, MPI_INT64_T, parent, TAG_DOWN, comm, MPI_STATUS_IGNORE);
    info->bytes_recv += (uint64_t)count * 8;
    for (size_t i = 0; ids && i < n; i++) ids[i] = got && (size_t)count == n ? got[i] : -1;
    free(got);
  }
  for (int s = nsteps - 1; s >= 0; s--) {
    step *st = &steps[s];
    int64_t *child_ids = malloc((st->childn + 1) * sizeof *child_ids);
    for (size_t j = 0; child_ids && j < st->childn; j++)
      child_ids[j] = ids && st->childmap ? ids[st->childmap[j]] : -1;
    PMPI_Send(child_ids, child_ids ? (int)st->childn : 0, MPI_INT64_T, st->child, TAG_DOWN, comm);
    info->bytes_sent += (uint64_t)st->childn * 8;
    free(child_ids);
    int64_t *prev = malloc((st->prevn + 1) * sizeof *prev);
    for (size_t i = 0; prev && i < st->prevn; i++)
      prev[i] = ids && st->prevmap ? ids[st->prevmap[i]] : -1;
    free(ids);
    ids = prev;
    free(st->prevmap); free(st->childmap);
  }
  for (size_t i = 0; i < mine->npaths; i++)
    gids[i] = ids ? ids[l2i[i]] : -1;
  free(ids);
  free(l2i);
  info->wall_s = PMPI_Wtime() - t0;

  /* ---- the collation's own figures, to rank 0 ---- */
  uint64_t mine2[2] = {info->bytes_sent, info->bytes_recv};
  uint64_t *all = rank == 0 ? malloc(2 * (size_t)P * sizeof *all) : NULL;
  PMPI_Gather(mine2, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, 0, comm);
  double wmax = 0;
  PMPI_Reduce(&info->wall_s, &wmax, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
  if (rank == 0 && out) {
    cp_collation_info *c = &out->coll;
    c->online = 1; c->rounds = R; c->nranks = P;
    c->wall_ns = (uint64_t)(wmax * 1e9);
    c->bytes_sent = calloc((size_t)P, sizeof *c->bytes_sent);
    c->bytes_recv = calloc((size_t)P, sizeof *c->bytes_recv);
    c->max_recv_rank = 0;
    for (int r = 0; all && c->bytes_sent && c->bytes_recv && r < P; r++) {
      c->bytes_sent[r] = all[2 * r]; c->bytes_recv[r] = all[2 * r + 1];
      if (all[2 * r + 1] > c->max_recv_bytes) { c->max_recv_bytes = all[2 * r + 1]; c->max_recv_rank = r; }
    }
  }
  free(all);
  return rc;
}
