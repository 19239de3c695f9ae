/*
 * tree_collate.c — binomial-tree merge of packed path sets over MPI
 * (tree_collate.h).  All MPI calls are PMPI_ so the application's own
 * profiling layers do not see ours.
 *
 * Each rank packs its own set, receives its children's packed sets, and
 * merges all of them in one k-way pass (collate/pset.h) either into the set
 * it sends up (paths only one input has are forwarded by memcpy) or, on
 * rank 0, straight into the summary.  The merge leaves, per input, the
 * output index of each of its paths: at the root that index is the global
 * id, so the id list of a child is that map itself; below, a rank receives
 * the ids of the set it sent up and turns each child's map into the child's
 * ids in place.  Down messages are u32 arrays, no strings.
 *
 * The collation's own figures (bytes sent and received by each rank) are
 * known to a rank when it sends up — what it will receive and send going
 * down follows from the set sizes — so they travel up as a trailer of the
 * set message instead of a gather that would make rank 0 wait for the
 * slowest leaf.
 */
#include "tree_collate.h"
#include "pset.h"
#include "reduce.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_UP 0x4350
#define TAG_DOWN 0x4351
#define MAXIN 64                /* own set + one child per round */

typedef struct fig { uint32_t rank; uint64_t sent, recv; } fig;
#define FIG_BYTES 20

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Wait for a message without spinning: ranks are often oversubscribed at
 * finalize (and always in tests), and a rank that busy-polls steals the
 * core its sender needs.  Sleeps grow with the time already waited (a
 * fraction 1/div of it, between 2 us and cap), so a long wait costs a few
 * dozen wake-ups and a short one stays short.  Going up (on the critical
 * path of rank 0) the fraction is small; going down, where most ranks wait
 * for most of the collation, it is larger.  nap_since: one sleep of a
 * wait that began at t0. */
static void nap_since(double t0, double div, double cap) {
  double d = (mono_s() - t0) / div;
  if (d < 2e-6) d = 2e-6;
  if (d > cap) d = cap;
  struct timespec ts = {0, (long)(d * 1e9)};
  nanosleep(&ts, NULL);
}

static void wait_probe(int src, int tag, MPI_Comm comm, MPI_Status *st, double div, double cap) {
  int flag = 0;
  const double t0 = mono_s();
  for (;;) {
    PMPI_Iprobe(src, tag, comm, &flag, st);
    if (flag) return;
    nap_since(t0, div, cap);
  }
}

/* Complete a request the same way: a blocking MPI_Send of a large set would
 * spin (oversubscribed: steal the receiver's core) until the receiver
 * reaches it. */
static void wait_req(MPI_Request *rq, double div, double cap) {
  int flag = 0;
  const double t0 = mono_s();
  for (;;) {
    PMPI_Test(rq, &flag, MPI_STATUS_IGNORE);
    if (flag) return;
    nap_since(t0, div, cap);
  }
}

/* backoff going up (rank 0's critical path) and down (most ranks waiting) */
#define UPD 16
#define UPC 250e-6
#define DND 8
#define DNC 4e-3

static void put_fig(unsigned char *p, const fig *f) {
  memcpy(p, &f->rank, 4); memcpy(p + 4, &f->sent, 8); memcpy(p + 12, &f->recv, 8);
}
static void get_fig(const unsigned char *p, fig *f) {
  memcpy(&f->rank, p, 4); memcpy(&f->sent, p + 4, 8); memcpy(&f->recv, p + 12, 8);
}

/* The figures trailer of a received set: u32 count, count x fig.  Returns
 * the count (0 when absent or damaged) and where the entries are. */
static uint32_t trailer_of(const cp_pbuf *b, const unsigned char **at) {
  uint64_t set_len = 0;
  uint32_t n = 0;
  *at = NULL;
  if (cp_pset_count(b->p, b->len, NULL, &set_len) != 0 || b->len - set_len < 4) return 0;
  memcpy(&n, b->p + set_len, 4);
  if (n > (b->len - set_len - 4) / FIG_BYTES) return 0;
  *at = b->p + set_len + 4;
  return n;
}

int cp_tree_collate(MPI_Comm comm, const cp_rank_data *mine, int hash_bits,
                    int64_t *gids, cp_summary *out, cp_tree_info *info) {
  int rank, P, rc = 0;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &P);
  int R = 0;
  while ((1 << R) < P) R++;
  memset(info, 0, sizeof *info);
  info->rounds = R;
  /* The wall time counts from when every rank is here.  A blocking barrier
   * spins in Open MPI, and the ranks that come first spun until the last:
   * on a 16-core host 64 ranks' collation took 0.355 CPU-s with it, 0.236
   * waited for as the messages below are, asleep between probes
   * (mpi_wrap/bench/collbench.c; share/doc/performance.md).  The wait's
   * cap, 250 us, bounds how late a rank leaves it. */
  MPI_Request brq;
  PMPI_Ibarrier(comm, &brq);
  wait_req(&brq, UPD, UPC);
  double t0 = PMPI_Wtime();

  cp_pbuf in[MAXIN];
  uint32_t *maps[MAXIN];
  uint64_t nin[MAXIN];
  int child[MAXIN];
  memset(in, 0, sizeof in); memset(maps, 0, sizeof maps); memset(nin, 0, sizeof nin);
  size_t k = 1;
  uint32_t *l2i = malloc((mine->npaths + 1) * sizeof *l2i);
  if (!l2i || cp_pset_from_rank(mine, hash_bits, &in[0], l2i) != 0) {
    fprintf(stderr, "collprof: rank %d: out of memory for collation; its paths are left out\n", rank);
    free(l2i); l2i = NULL;
    if (cp_pset_empty(&in[0]) != 0) in[0].len = 0;
    rc = -1;
  }
  child[0] = rank;

  /* ---- up: receive every child's set, in the order they come ---- */
  int parent = -1;
  uint64_t recv_up = 0;
  int nchild = 0;
  for (int r = 0; r < R; r++) {
    int mask = 1 << r;
    if (rank & mask) { parent = rank - mask; break; }
    if (rank + mask < P) nchild++;
  }
  for (int c = 0; c < nchild; c++) {
    MPI_Status st;
    int count = 0;
    wait_probe(MPI_ANY_SOURCE, TAG_UP, comm, &st, UPD, UPC);
    int src = st.MPI_SOURCE;
    PMPI_Get_count(&st, MPI_BYTE, &count);
    cp_pbuf *b = &in[k];
    if (cp_pbuf_alloc_full(b, count > 0 ? (size_t)count : 1) != 0) {
      /* cannot hold it: receive into a scratch byte to unblock the sender */
      unsigned char junk[1];
      PMPI_Recv(junk, 0, MPI_BYTE, src, TAG_UP, comm, MPI_STATUS_IGNORE);
      rc = -1;
    } else {
      PMPI_Recv(b->p, count, MPI_BYTE, src, TAG_UP, comm, MPI_STATUS_IGNORE);
      b->len = (size_t)count;
    }
    recv_up += (uint64_t)count;
    child[k++] = src;
  }

  /* the figures of this subtree: children's trailers, then ours */
  size_t nfig = 1;
  for (size_t i = 1; i < k; i++) { const unsigned char *at; nfig += trailer_of(&in[i], &at); }
  fig *figs = calloc(nfig, sizeof *figs);
  nfig = 0;
  if (figs) {
    nfig = 1;
    for (size_t i = 1; i < k; i++) {
      const unsigned char *at;
      uint32_t n = trailer_of(&in[i], &at);
      for (uint32_t j = 0; j < n; j++) get_fig(at + (size_t)j * FIG_BYTES, &figs[nfig++]);
    }
  }

  /* ---- merge: one pass over all inputs ---- */
  uint64_t down_sent = 0;
  for (size_t i = 0; i < k; i++) {
    if (!in[i].p || cp_pset_count(in[i].p, in[i].len, &nin[i], NULL) != 0) {
      if (i) fprintf(stderr, "collprof: rank %d: bad collation message from rank %d\n", rank, child[i]);
      nin[i] = 0; rc = -1;
    }
    maps[i] = malloc((nin[i] + 1) * sizeof *maps[i]);
    if (!maps[i]) { nin[i] = 0; rc = -1; }
    if (i) down_sent += nin[i] * 4;
  }
  uint64_t nout = 0, set_bytes = 0;
  cp_pbuf up;
  memset(&up, 0, sizeof up);
  size_t tr = 4 + nfig * FIG_BYTES;
  if (parent >= 0) {
    if (cp_pset_merge(in, k, maps, &up, tr, NULL, &set_bytes, &nout) != 0) rc = -1;
    if (!up.p && cp_pset_empty(&up) != 0) up.len = 0;
    if (!up.p || up.cap - up.len < tr) nfig = 0, tr = up.p && up.cap - up.len >= 4 ? 4 : 0;
    if (up.p && cp_pset_count(up.p, up.len, &nout, NULL) != 0) nout = 0;
  } else {
    if (out) cp_summary_config(out, mine, P, hash_bits);
    if (cp_pset_merge(in, k, maps, NULL, 0, out, &set_bytes, &nout) != 0) rc = -1;
  }
  for (size_t i = 0; i < k; i++) cp_pbuf_free(&in[i]);

  if (parent >= 0) {
    /* ---- send up, with the figures ---- */
    size_t len = up.len;
    if (figs && nfig) {
      figs[0].rank = (uint32_t)rank;
      figs[0].sent = up.len + tr + down_sent;
      figs[0].recv = recv_up + nout * 4;
    }
    if (tr >= 4) {
      uint32_t n = (uint32_t)nfig;
      memcpy(up.p + len, &n, 4);
      for (size_t j = 0; j < nfig; j++) put_fig(up.p + len + 4 + j * FIG_BYTES, &figs[j]);
      len += tr;
    }
    /* not waited for here: the parent takes it when it is ready (with
     * CMA it copies it itself); probing for the answer below progresses it */
    MPI_Request rq;
    PMPI_Isend(up.p, (int)len, MPI_BYTE, parent, TAG_UP, comm, &rq);
    info->bytes_sent += len;

    /* ---- down: the ids of the set we sent, then each child's ---- */
    MPI_Status st;
    int count = 0;
    wait_probe(parent, TAG_DOWN, comm, &st, DND, DNC);
    PMPI_Get_count(&st, MPI_UINT32_T, &count);
    uint32_t *ids = malloc(((size_t)count + 1) * sizeof *ids);
    PMPI_Recv(ids ? (void *)ids : (void *)&nout, ids ? count : 0, MPI_UINT32_T, parent, TAG_DOWN, comm,
              MPI_STATUS_IGNORE);
    info->bytes_recv += (uint64_t)count * 4;
    PMPI_Wait(&rq, MPI_STATUS_IGNORE);   /* the parent had it before it answered */
    cp_pbuf_free(&up);
    if (!ids || (uint64_t)count != nout) { free(ids); ids = NULL; rc = -1; }
    for (size_t i = 0; i < k; i++)
      for (uint64_t j = 0; maps[i] && j < nin[i]; j++)
        maps[i][j] = ids && maps[i][j] < nout ? ids[maps[i][j]] : UINT32_MAX;
    free(ids);
  }
  /* maps[i] now hold global ids (at the root the output index is one);
   * the largest subtree (the lowest bit) first: the longest way down */
  MPI_Request rqs[MAXIN];
  int nrq = 0, sent[MAXIN] = {0};
  for (size_t j = 1; j < k; j++) {
    size_t i = 0;                      /* the unsent child of the highest rank */
    for (size_t m = 1; m < k; m++) if (!sent[m] && (!i || child[m] > child[i])) i = m;
    sent[i] = 1;
    PMPI_Isend(maps[i] ? (void *)maps[i] : (void *)&nout, maps[i] ? (int)nin[i] : 0, MPI_UINT32_T, child[i],
               TAG_DOWN, comm, &rqs[nrq++]);
    info->bytes_sent += nin[i] * 4;
  }
  /* children poll at the down pace: wait for them at that pace */
  for (int q = 0; q < nrq; q++) wait_req(&rqs[q], DND, DNC);
  for (size_t i = 0; i < mine->npaths; i++) {
    uint32_t g = l2i && maps[0] && l2i[i] < nin[0] ? maps[0][l2i[i]] : UINT32_MAX;
    gids[i] = g == UINT32_MAX ? -1 : (int64_t)g;
  }
  info->bytes_recv += recv_up;

  /* ---- root: the summary's remaining numbers ---- */
  if (parent < 0 && out) {
    cp_summary_finish(out);
    cp_collation_info *c = &out->coll;
    c->online = 1; c->rounds = R; c->nranks = P;
    c->global_set_bytes = set_bytes;
    c->bytes_sent = calloc((size_t)P, sizeof *c->bytes_sent);
    c->bytes_recv = calloc((size_t)P, sizeof *c->bytes_recv);
    if (figs && nfig) { figs[0].rank = 0; figs[0].sent = info->bytes_sent; figs[0].recv = info->bytes_recv; }
    c->max_recv_rank = 0;
    for (size_t j = 0; c->bytes_sent && c->bytes_recv && j < nfig; j++) {
      if (figs[j].rank >= (uint32_t)P) continue;
      c->bytes_sent[figs[j].rank] = figs[j].sent; c->bytes_recv[figs[j].rank] = figs[j].recv;
    }
    for (int r = 0; c->bytes_recv && r < P; r++)
      if (c->bytes_recv[r] > c->max_recv_bytes) { c->max_recv_bytes = c->bytes_recv[r]; c->max_recv_rank = r; }
  }
  for (size_t i = 0; i < k; i++) free(maps[i]);
  free(figs);
  free(l2i);
  info->wall_s = PMPI_Wtime() - t0;
  if (parent < 0 && out) out->coll.wall_ns = (uint64_t)(info->wall_s * 1e9);
  return rc;
}
