/*
 * test_collate.c — unit tests of collate/ (MPI-free collation) on synthetic
 * ranks: global ids are positions in the (hash, string) order, numbers
 * combine exactly, a path missing on a rank is not a zero, collisions stay
 * two paths, merging is order-independent (also over random ranks and
 * random merge trees), packing round-trips, the
 * reader survives damaged lines.  Expected values are computed here from
 * the inputs, not typed in.
 */
#include "collate_run.h"
#include "pset.h"
#include "merge.h"
#include "rankfile_read.h"
#include "reduce.h"
#include "report.h"
#include "snapshot.h"
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int n_test, n_fail;
static void ok(int cond, const char *name) {
  n_test++;
  if (!cond) n_fail++;
  printf("%s %d - %s\n", cond ? "ok" : "not ok", n_test, name);
}

typedef struct { const char *path; uint64_t hash; uint64_t calls, total; } spec;

static void mk_rank(cp_rank_data *r, int rank, const spec *sp, size_t n) {
  memset(r, 0, sizeof *r);
  r->rank = rank; r->world_size = 3; r->pid = 100 + rank;
  snprintf(r->host, sizeof r->host, "host%d", rank % 2);
  r->command = strdup("app");
  r->start_ns = 1000; r->end_ns = 1000 + 1000000u * (unsigned)(rank + 1);
  r->events_recorded = 10u * (unsigned)(rank + 1); r->per_event_cost_ns = 1.5;
  r->paths = calloc(n, sizeof *r->paths);
  r->npaths = n;
  for (size_t i = 0; i < n; i++) {
    cp_path_rec *p = &r->paths[i];
    p->id = -1; p->local = (uint32_t)i; p->hash = sp[i].hash;
    p->path = strdup(sp[i].path); p->leaf_func = strdup("AllReduce"); p->leaf_type = 2;
    p->calls = sp[i].calls; p->total_ns = sp[i].total; p->self_ns = sp[i].total / 2;
    p->min_ns = sp[i].calls ? sp[i].total / sp[i].calls : 0; p->max_ns = p->min_ns;
    p->bytes = 8 * sp[i].calls;
  }
}

static const cp_gpath *find(const cp_summary *s, const char *path) {
  for (size_t i = 0; i < s->npaths; i++) if (!strcmp(s->paths[i].path, path)) return &s->paths[i];
  return NULL;
}

/* Random ranks for the order-independence check below: paths from a pool
 * of 12 names whose hashes collide in fives, communicators 77 and 78 that
 * ranks describe differently, hosts, frozen masks, in-situ or start-up
 * cost figures.  xorshift64, seeded: the same ranks every run. */
static uint64_t rnd_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
  rnd_state ^= rnd_state << 13; rnd_state ^= rnd_state >> 7; rnd_state ^= rnd_state << 17;
  return rnd_state;
}
static void mk_random_rank(cp_rank_data *r, int rank) {
  static const char *names[12] = {"P0", "P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9", "P10", "P11"};
  static const char *cnames[3] = {"world", "split", "x"};
  static const char *why[3] = {"", "CUDA graph capture seen, KernelCh off", "NCCL calls from a second thread, KernelCh on"};
  spec sp[12];
  size_t n = 0;
  for (int i = 0; i < 12; i++)
    if (rnd() % 3) sp[n++] = (spec){names[i], (uint64_t)(i % 5) + 1, 1 + rnd() % 50, 1 + rnd() % 100000};
  mk_rank(r, rank, sp, n);
  r->world_size = 6;
  snprintf(r->host, sizeof r->host, "host%d", (int)(rnd() % 3));
  snprintf(r->mask_frozen, sizeof r->mask_frozen, "%s", why[rnd() % 3]);
  r->events_counted = rnd() % 1000;
  if (rnd() % 2) {
    r->cost_windows = 1 + rnd() % 9; r->cost_callbacks = 1 + rnd() % 5000;
    r->cost_est_ns = rnd() % 10000000; r->cost_err_ns = (int64_t)(rnd() % 1000000);
  }
  r->cost_setup_ns = rnd() % 100000;
  r->ncomms = 1 + rnd() % 3;
  r->comms = calloc(r->ncomms, sizeof *r->comms);
  for (size_t i = 0; i < r->ncomms; i++) {
    cp_comm_rec *c = &r->comms[i];
    c->comm_id = 77 + rnd() % 2; c->nranks = 2 + (int)(rnd() % 3); c->nnodes = 1 + (int)(rnd() % 2);
    c->events = rnd() % 10000;
    snprintf(c->comm_name, sizeof c->comm_name, "%s", cnames[rnd() % 3]);
  }
}
/* Merges the sets of ranks r[0..n) in a random tree (random groups of 2-4,
 * as the MPI tree's children arrive in any order) into *out; 0 on success. */
static int merge_random_tree(const cp_rank_data *r, size_t n, cp_pbuf *out) {
  cp_pbuf live[8], in[4];
  size_t nl = 0;
  for (size_t i = 0; i < n; i++)
    if (cp_pset_from_rank(&r[i], 64, &live[nl++], NULL)) return -1;
  while (nl > 1) {
    size_t k = 2 + rnd() % 3;
    if (k > nl) k = nl;
    for (size_t j = 0; j < k; j++) {          /* take k at random */
      size_t x = rnd() % nl;
      in[j] = live[x]; live[x] = live[--nl];
    }
    if (cp_pset_merge(in, k, NULL, &live[nl], 0, NULL, NULL, NULL)) return -1;
    nl++;
    for (size_t j = 0; j < k; j++) cp_pbuf_free(&in[j]);
  }
  *out = live[0];
  return 0;
}

int main(void) {
  /* A on all ranks, B on ranks 0 and 2, C only on rank 2, D and E collide */
  spec r0[] = {{"A", 50, 10, 1000}, {"B", 20, 1, 300}, {"D", 7, 2, 20}};
  spec r1[] = {{"A", 50, 10, 3000}, {"E", 7, 2, 40}};
  spec r2[] = {{"C", 90, 5, 500}, {"A", 50, 10, 2000}, {"B", 20, 3, 100}};
  cp_run run = {0};
  run.nranks = 3;
  run.ranks = calloc(3, sizeof *run.ranks);
  mk_rank(&run.ranks[0], 0, r0, 3);
  mk_rank(&run.ranks[1], 1, r1, 2);
  mk_rank(&run.ranks[2], 2, r2, 3);
  cp_summary s;
  ok(cp_collate_run(&run, 64, &s) == 0, "collate 3 synthetic ranks");
  ok(s.npaths == 5, "5 global paths (collision kept apart)");
  int sorted = 1;
  for (size_t i = 1; i < s.npaths; i++)
    if (s.paths[i - 1].hash > s.paths[i].hash ||
        (s.paths[i - 1].hash == s.paths[i].hash && strcmp(s.paths[i - 1].path, s.paths[i].path) >= 0))
      sorted = 0;
  ok(sorted, "ids ordered by (hash, string)");
  ok(s.ncollisions == 1 && find(&s, "D")->collides && find(&s, "E")->collides, "one collision reported");
  const cp_gpath *a = find(&s, "A"), *b = find(&s, "B"), *c = find(&s, "C");
  ok(a && a->s.calls == 30 && a->s.total_ns == 6000 && a->s.nranks == 3, "A summed over 3 ranks");
  ok(a->s.tmax_ns == 3000 && a->s.tmax_rank == 1 && a->s.tmin_ns == 1000 && a->s.tmin_rank == 0,
     "A min/max with ranks");
  cp_gderived da, db, dc;
  cp_gpath_derive(&s, a, &da); cp_gpath_derive(&s, b, &db); cp_gpath_derive(&s, c, &dc);
  ok(da.avg_ns == 2000.0 && da.imbalance_pct == 50.0 && da.imbalance_rank == 1, "A imbalance +50% on rank 1");
  /* B: 300 on rank 0, 100 on rank 2, absent on 1: avg 200, not 133 */
  ok(b->s.nranks == 2 && db.avg_ns == 200.0 && b->s.tmin_rank == 2, "B: missing rank is not a zero");
  ok(c->s.nranks == 1 && c->s.tmin_rank == 2 && c->s.tmax_rank == 2 && dc.imbalance_pct == 0.0,
     "C on one rank only");
  /* imbalance negative when the minimum deviates more: totals 10, 100, 100 */
  {
    spec x0[] = {{"X", 1, 1, 10}}, x1[] = {{"X", 1, 1, 100}}, x2[] = {{"X", 1, 1, 100}};
    cp_run r2run = {0};
    r2run.nranks = 3; r2run.ranks = calloc(3, sizeof *r2run.ranks);
    mk_rank(&r2run.ranks[0], 0, x0, 1); mk_rank(&r2run.ranks[1], 1, x1, 1); mk_rank(&r2run.ranks[2], 2, x2, 1);
    cp_summary s2;
    cp_collate_run(&r2run, 64, &s2);
    double avg = 70.0, expect = -100.0 * (avg - 10) / avg;
    cp_gderived d2;
    cp_gpath_derive(&s2, &s2.paths[0], &d2);
    ok(d2.imbalance_pct < 0 && d2.imbalance_pct == expect && d2.imbalance_rank == 0,
       "imbalance negative when the minimum is the larger deviation");
    cp_summary_free(&s2); cp_run_free(&r2run);
  }
  /* Bus bandwidth (collate/reduce.h): nccl-tests' factors over the KernelCh
   * GPU time per call; none from host time, which for a call without
   * KernelCh is NCCL's enqueue (2 us here: 1.5 TB/s for 1 MiB). */
  {
    cp_summary bs;
    memset(&bs, 0, sizeof bs);
    bs.agg.bw_nranks = 4;
    cp_gpath bp;
    cp_pgpu bg;
    memset(&bp, 0, sizeof bp);
    memset(&bg, 0, sizeof bg);
    bp.s.gpu = &bg;
    bp.path = "GroupApi/CollApi:AllReduce/Coll:AllReduce"; bp.leaf_func = "AllReduce"; bp.leaf_type = 2;
    bp.s.calls = 10; bp.s.bytes = 10u << 20; bp.s.total_ns = 10 * 2000; bp.s.nranks = 1;
    bg.gpu_samples = 10; bg.gpu_ns = 10 * 100000;   /* every call sampled, 100 us each */
    cp_gderived d;
    cp_gpath_derive(&bs, &bp, &d);
    const double want = (double)(1u << 20) / 100000.0 * 2.0 * 3 / 4;
    ok(d.bw_valid && fabs(d.busbw_gbs - want) < 1e-9 * want,
       "bus bandwidth: AllReduce on 4 ranks, 1 MiB in 100 us of KernelCh time: 15.73 GB/s");
    bg.gpu_samples = bg.gpu_ns = 0;
    cp_gpath_derive(&bs, &bp, &d);
    ok(!d.bw_valid, "bus bandwidth: none without KernelCh samples (not from the 2 us host time)");
  }
  /* GPU estimate (collate/reduce.h): first-call samples count once, the
   * periodic samples' mean stands for the other calls; sums cross the
   * packed merge.  Per rank: calls, samples, first samples, gpu_ns, first ns. */
  {
    struct { uint64_t calls, s, sf, g, f; } gv[3] = {
      {100, 7, 1, 9000000 + 6 * 1000, 9000000},   /* a 9 ms first call, six of 1 us */
      {100, 6, 1, 4000000 + 5 * 1200, 4000000},
      {100, 6, 0, 6 * 800, 0}};
    spec g0[] = {{"G", 3, 100, 1000}}, g1[] = {{"G", 3, 100, 1000}}, g2[] = {{"G", 3, 100, 1000}};
    const spec *gs[3] = {g0, g1, g2};
    /* cases: 0 as above; 1 every call sampled (exact); 2 only first-call
     * samples; 3 files without first-call fields; 4 a rank's first-call
     * part larger than its total: that rank's first-call part is ignored
     * (0-4: files without the ranks' size-class estimates, gpu_est_*);
     * 5 ranks 0 and 1 with their size-class estimates, rank 2 without a
     * periodic sample (covers its first-call samples only); 6 as 5 with
     * rank 1's estimate covering more calls than it has: ignored */
    for (int cs = 0; cs < 7; cs++) {
      cp_run gr = {0};
      gr.nranks = 3; gr.ranks = calloc(3, sizeof *gr.ranks);
      uint64_t C = 0, S = 0, SF = 0, G = 0, F = 0;
      for (int i = 0; i < 3; i++) {
        mk_rank(&gr.ranks[i], i, gs[i], 1);
        cp_path_rec *p = &gr.ranks[i].paths[0];
        p->calls = gv[i].calls; p->gpu_samples = gv[i].s; p->gpu_first_samples = gv[i].sf;
        p->gpu_ns = gv[i].g; p->gpu_first_ns = gv[i].f;
        if (cs == 1) p->gpu_samples = p->calls;
        if (cs == 2) { p->gpu_first_samples = p->gpu_samples = 2; p->gpu_first_ns = p->gpu_ns; }
        if (cs == 3) p->gpu_first_samples = p->gpu_first_ns = 0;
        if (cs == 4 && i == 0) p->gpu_first_ns = p->gpu_ns + 1;
        if (cs >= 5) {
          p->has_est = 1;
          if (i == 2) { p->gpu_samples = p->gpu_first_samples = 1; p->gpu_ns = p->gpu_first_ns = 5000; }
          p->gpu_est_ns = i == 2 ? 5000 : 9000000 + 150000 * (uint64_t)(i + 1);
          p->gpu_est_calls = i == 2 ? 1 : 100;
          p->gpu_outliers = i == 0;
          if (cs == 6 && i == 1) p->gpu_est_calls = 101;
        }
        C += p->calls; S += p->gpu_samples; G += p->gpu_ns;
        if (!(cs == 4 && i == 0)) { SF += p->gpu_first_samples; F += p->gpu_first_ns; }   /* dropped */
      }
      cp_summary gsum;
      cp_collate_run(&gr, 64, &gsum);
      cp_gderived d;
      cp_gpath_derive(&gsum, &gsum.paths[0], &d);
      cp_pstat whole;
      const cp_pstat *st = cp_gpath_pstat(&gsum.paths[0], &whole);
      char name[160];
      snprintf(name, sizeof name, "GPU case %d: first-call numbers summed over ranks", cs);
      ok(st->gpu_first_samples == SF && st->gpu_first_ns == F && st->gpu_samples == S && st->gpu_ns == G, name);
      double want, per;
      double pooled = (double)(G - F) / (double)(S - SF);   /* every rank's periodic mean */
      if (cs == 1) want = (double)G;
      else if (cs == 2) want = (double)G;   /* the sampled calls alone: no periodic mean to lend */
      else if (cs == 5) want = 9150000.0 + 9300000.0 + 5000.0 + pooled * 99;
      else if (cs == 6)   /* rank 1 as a file without estimate: F1 + pooled x (100 - Sf1) */
        want = 9150000.0 + 5000.0 + (double)gv[1].f + pooled * (99 + 100 - (double)gv[1].sf);
      else want = (double)F + pooled * (double)(C - SF);
      per = cs == 2 ? (double)G / (double)S : want / (double)C;   /* case 2: the first calls' mean */
      if (cs >= 5) {
        snprintf(name, sizeof name, "GPU case %d: size-class parts summed (outliers %" PRIu64 ")", cs,
                 st->gpu_outliers);
        ok(st->gpu_outliers == 1 && st->gpu_est_calls == (cs == 5 ? 201u : 101u + gv[1].sf), name);
      }
      snprintf(name, sizeof name, "GPU case %d: estimate %.0f ns (want %.0f), per call %.1f (want %.1f), %s",
               cs, d.gpu_est_ns, want, d.gpu_call_ns, per, d.gpu_exact ? "exact" : "estimate");
      ok(fabs(d.gpu_est_ns - want) < 1e-6 * want && fabs(d.gpu_call_ns - per) < 1e-6 * per &&
         d.gpu_exact == (cs == 1) && d.gpu_first_only == (cs == 2), name);
      if (cs == 2) {
        /* no bandwidth from a first-call mean (it holds NCCL's set-up) */
        ok(!d.bw_valid, "GPU case 2: only first-call samples: no bandwidth from them");
        /* summary.log: ">" on the total, "f" on the mean, the line that says why */
        char tmpl[] = "/tmp/cp_first_only_XXXXXX", buf[8192] = "";
        const int fd = mkstemp(tmpl);
        if (fd >= 0) close(fd);
        FILE *mf = fd >= 0 && cp_write_summary_log(&gsum, tmpl) == 0 ? fopen(tmpl, "r") : NULL;
        if (mf) { buf[fread(buf, 1, sizeof buf - 1, mf)] = 0; fclose(mf); }
        if (fd >= 0) unlink(tmpl);
        ok(strstr(buf, ">    0.") && strstr(buf, "| f ") && strstr(buf, "> f: only first-call samples"),
           "GPU case 2: summary.log marks the sampled calls' time > and their mean f, and says why");
      }
      if (cs == 0) {
        double plain = (double)G / (double)S * (double)C;   /* what mean x calls would say */
        snprintf(name, sizeof name, "GPU case 0: the two first calls count once (%.0f ns), not ~%.0fx (%.0f ns)",
                 want, plain / want, plain);
        ok(plain > 5 * want, name);
      }
      cp_summary_free(&gsum); cp_run_free(&gr);
    }
  }
  int ids_ok = 1;
  for (size_t i = 0; i < run.nranks; i++)
    for (size_t j = 0; j < run.ranks[i].npaths; j++) {
      const cp_path_rec *p = &run.ranks[i].paths[j];
      if (p->id < 0 || strcmp(s.paths[p->id].path, p->path)) ids_ok = 0;
    }
  ok(ids_ok, "every rank path got its global id");
  double selfsum = 0;
  for (size_t i = 0; i < s.npaths; i++) { cp_gderived d; cp_gpath_derive(&s, &s.paths[i], &d); selfsum += d.self_pct; }
  ok(selfsum > 99.999 && selfsum < 100.001, "self % sums to 100");
  ok(s.agg.overhead_ns == 15 + 30 + 45, "overhead = events x cost summed");

  /* merge order and grouping independence: ((0,1),2) = ((1,2),0) = (0,1,2),
   * byte for byte; maps point every input path at its merged path.  The
   * ranks disagree on communicator 77's size and name (a fuzzed run's ids
   * do): whichever rank comes first must not decide which one is kept. */
  {
    static const struct { const char *name; int nranks; } desc[3] = {{"world", 3}, {"split", 2}, {"world", 4}};
    for (int i = 0; i < 3; i++) {
      cp_rank_data *r = &run.ranks[i];
      free(r->comms);
      r->comms = calloc(2, sizeof *r->comms);
      r->ncomms = 2;
      r->comms[0].comm_id = 77; r->comms[0].nranks = desc[i].nranks; r->comms[0].nnodes = 1;
      snprintf(r->comms[0].comm_name, sizeof r->comms[0].comm_name, "%s", desc[i].name);
      r->comms[1].comm_id = 77; r->comms[1].nranks = desc[2 - i].nranks; r->comms[1].nnodes = 1;
      snprintf(r->comms[1].comm_name, sizeof r->comms[1].comm_name, "%s", desc[2 - i].name);
    }
    cp_pbuf m[3], ab, bc, abc1, abc2, abc3, p2[2];
    uint32_t l2i[3][3], mp[3][8];
    uint32_t *mv[3] = {mp[0], mp[1], mp[2]};
    for (int i = 0; i < 3; i++) cp_pset_from_rank(&run.ranks[i], 64, &m[i], l2i[i]);
    uint64_t n1 = 0, n2 = 0, n3 = 0, bytes = 0;
    cp_pset_merge(m, 2, NULL, &ab, 0, NULL, NULL, NULL);
    p2[0] = ab; p2[1] = m[2];
    cp_pset_merge(p2, 2, NULL, &abc1, 0, NULL, &bytes, &n1);
    p2[0] = m[1]; p2[1] = m[2];
    cp_pset_merge(p2, 2, NULL, &bc, 0, NULL, NULL, NULL);
    p2[0] = bc; p2[1] = m[0];
    cp_pset_merge(p2, 2, NULL, &abc2, 0, NULL, NULL, &n2);
    cp_pset_merge(m, 3, mv, &abc3, 0, NULL, NULL, &n3);
    ok(n1 == 5 && n2 == 5 && n3 == 5, "merges give 5 paths");
    ok(abc1.len == abc2.len && !memcmp(abc1.p, abc2.p, abc1.len) && abc1.len == abc3.len &&
       !memcmp(abc1.p, abc3.p, abc1.len), "merge order and grouping do not change the result");
    ok(bytes == abc1.len, "set size reported = packed size");
    int mapped = 1;
    for (int i = 0; i < 3; i++)
      for (size_t j = 0; j < run.ranks[i].npaths; j++)
        if ((int64_t)mp[i][l2i[i][j]] != run.ranks[i].paths[j].id) mapped = 0;
    ok(mapped, "k-way maps = global ids of the offline collation");
    /* damaged input: counted as empty from the damage on, no crash */
    cp_pbuf bad = abc1;
    bad.len = abc1.len - 3;
    uint64_t nb = 0;
    cp_pbuf outb;
    p2[0] = bad; p2[1] = m[0];
    ok(cp_pset_merge(p2, 2, NULL, &outb, 0, NULL, NULL, &nb) != 0 && nb >= 3, "truncated set rejected without crash");
    cp_pbuf_free(&outb);
    uint64_t np = 0;
    ok(cp_pset_count(abc1.p, 7, &np, NULL) != 0, "truncated header rejected");
    for (int i = 0; i < 3; i++) cp_pbuf_free(&m[i]);
    cp_pbuf_free(&ab); cp_pbuf_free(&bc); cp_pbuf_free(&abc1); cp_pbuf_free(&abc2); cp_pbuf_free(&abc3);
  }

  /* Random order independence: 6 random ranks, 40 random merge trees, all
   * byte for byte the k-way merge in rank order (what an offline collation
   * does; the MPI tree's children arrive in any order). */
  {
    cp_run rr = {0};
    rr.nranks = 6;
    rr.ranks = calloc(6, sizeof *rr.ranks);
    for (int i = 0; i < 6; i++) mk_random_rank(&rr.ranks[i], i);
    cp_pbuf m[6], ref;
    for (int i = 0; i < 6; i++) cp_pset_from_rank(&rr.ranks[i], 64, &m[i], NULL);
    int same = cp_pset_merge(m, 6, NULL, &ref, 0, NULL, NULL, NULL) == 0, trees = 0;
    for (int t = 0; t < 40 && same; t++) {
      cp_pbuf o;
      if (merge_random_tree(rr.ranks, 6, &o)) { same = 0; break; }
      same = o.len == ref.len && !memcmp(o.p, ref.p, o.len);
      if (!same) printf("# tree %d differs (%zu bytes against %zu)\n", t, (size_t)o.len, (size_t)ref.len);
      cp_pbuf_free(&o);
      trees++;
    }
    ok(same && trees == 40, "40 random merge trees of 6 random ranks = the k-way merge, byte for byte");
    for (int i = 0; i < 6; i++) cp_pbuf_free(&m[i]);
    cp_pbuf_free(&ref);
    cp_run_free(&rr);
  }

  /* hash truncation forces collisions */
  cp_summary s4;
  cp_collate_run(&run, 4, &s4);
  ok(s4.npaths == 5 && s4.hash_bits == 4, "hash bits 4: still 5 paths");
  cp_summary_free(&s4);

  /* reader: damaged lines are reported and skipped */
  char dir[] = "/tmp/collprof-unit-XXXXXX";
  if (mkdtemp(dir)) {
    char f[256];
    snprintf(f, sizeof f, "%s/rank0.jsonl", dir);
    FILE *o = fopen(f, "w");
    fprintf(o, "{\"recordType\":\"meta\"}\n{\"recordType\":\"event\",\"type\":\"x\"\n");
    fprintf(o, "not json}\n");
    fprintf(o, "{\"recordType\":\"path\",\"id\":null,\"local\":0,\"hash\":\"0x0000000000000032\",\"path\":\"A\","
               "\"leafType\":\"ncclProfileColl\",\"leafFunc\":\"AllReduce\",\"calls\":4,\"total_ns\":40}\n");
    fprintf(o, "{\"recordType\":\"rank\",\"rank\":0,\"worldSize\":1,\"startTs\":1.500,\"endTs\":3.250,"
               "\"comms\":[{\"commId\":\"18446744073709551615\",\"nranks\":2}]}\n");
    fclose(o);
    cp_rank_data rd; size_t bad;
    ok(cp_rankfile_read(f, &rd, &bad) == 0 && bad == 2, "two damaged lines reported");
    ok(rd.npaths == 1 && rd.paths[0].calls == 4 && rd.paths[0].hash == 50 && rd.paths[0].leaf_type == 2,
       "path record read");
    ok(rd.start_ns == 1500 && rd.end_ns == 3250 && rd.ncomms == 1 && rd.comms[0].comm_id == UINT64_MAX,
       "rank record read (us -> ns, 64-bit commId)");
    cp_rank_data_free(&rd);
    unlink(f); rmdir(dir);
  }
  /* Packed numbers round-trip (pset_codec.h: a bitmap of the numbers that are
   * not 0, then their varints; a record whose numbers sit 264 bytes or
   * more before its set's end is read without a bound test per byte and
   * checked against its end after): a rank of 64 paths whose numbers
   * range over 0, one byte and up to 63 bits, packed and merged into a
   * summary, gives each path the numbers it had; damage in the middle of
   * the set is rejected without a crash. */
  {
    cp_rank_data big;
    memset(&big, 0, sizeof big);
    big.rank = 5; big.world_size = 8; big.command = strdup("app");
    big.npaths = 64;
    big.paths = calloc(big.npaths, sizeof *big.paths);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < big.npaths; i++) {
      cp_path_rec *p = &big.paths[i];
      char name[64];
      snprintf(name, sizeof name, "GroupApi/CollApi:AllReduce/Coll:AllReduce/P%03zu", i);
      p->id = -1; p->local = (uint32_t)i; p->path = strdup(name); p->leaf_func = strdup("AllReduce");
      p->leaf_type = 2; p->hash = 1000 + i * 7919;
      uint64_t *f[] = {&p->calls, &p->total_ns, &p->self_ns, &p->min_ns, &p->max_ns, &p->bytes, &p->states,
                       &p->gpu_ns, &p->gpu_samples, &p->gpu_launch_ns, &p->gpu_launch_samples,
                       &p->unterminated, &p->untimed_calls, &p->unseen_calls};
      for (size_t k = 0; k < sizeof f / sizeof *f; k++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;   /* xorshift: 0, < 128, or up to 63 bits */
        *f[k] = (x % 3 == 0) ? 0 : (x % 3 == 1) ? (x >> 8) % 128 : (x >> (1 + (x >> 58) % 60)) & INT64_MAX;
      }
      p->gpu_first_ns = p->gpu_ns / 3; p->gpu_first_samples = p->gpu_samples / 2;
      p->has_est = (int)(i % 2);
      p->gpu_est_calls = p->calls / 2; p->gpu_est_ns = p->gpu_ns / 2; p->gpu_outliers = p->gpu_samples / 4;
      p->gpu_borrowed_calls = p->gpu_est_calls / 3;
      p->has_launch_calls = (int)(i % 3 != 0); p->gpu_launch_calls = p->calls / 4;
    }
    cp_pbuf one[1];
    uint32_t l2i[64], map[65], *mv[1] = {map};
    ok(cp_pset_from_rank(&big, 64, &one[0], l2i) == 0 && one[0].len > 64 * 264 / 4, "64 paths packed");
    cp_pbuf keep;
    memset(&keep, 0, sizeof keep);
    if (cp_pbuf_alloc(&keep, one[0].len) == 0) { memcpy(keep.p, one[0].p, one[0].len); keep.len = one[0].len; }
    cp_summary bs;
    memset(&bs, 0, sizeof bs);
    uint64_t n = 0;
    ok(cp_pset_merge(one, 1, mv, NULL, 0, &bs, NULL, &n) == 0 && n == 64 && bs.npaths == 64, "merged into a summary");
    int same = bs.npaths == 64;
    for (size_t i = 0; same && i < big.npaths; i++) {
      cp_pstat want, got;
      cp_pstat_from_rec(&want, &big.paths[i], big.rank);
      if (!want.gpu_launch_samples) want.gpu_launch_calls = 0;   /* held only with launch samples (pset_merge.c) */
      const cp_gpath *g = &bs.paths[map[l2i[i]]];
      cp_gpath_pstat(g, &got);
      if (!cp_gpath_gpu(g)->gpu_launch_samples) got.gpu_launch_calls = 0;
      same = !strcmp(g->path, big.paths[i].path) && !memcmp(&want.core, &got.core, sizeof want.core) &&
             !memcmp(&want.gpu, &got.gpu, sizeof want.gpu);
    }
    ok(same, "every path's numbers, core and GPU, as packed (0, one byte, up to 63 bits)");
    cp_summary_free(&bs);
    cp_pbuf_free(&one[0]);
    /* damage: a run of 0xff (varints that never end) in the middle */
    if (keep.p) {
      cp_pbuf dam[1];
      memset(dam, 0, sizeof dam);
      cp_pbuf_alloc(&dam[0], keep.len);
      memcpy(dam[0].p, keep.p, keep.len);
      dam[0].len = keep.len;
      memset(dam[0].p + keep.len / 2, 0xff, 40);
      cp_summary ds;
      memset(&ds, 0, sizeof ds);
      ok(cp_pset_merge(dam, 1, NULL, NULL, 0, &ds, NULL, &n) != 0 && n < 64, "damaged numbers rejected without crash");
      cp_summary_free(&ds);
      cp_pbuf_free(&dam[0]);
    }
    cp_pbuf_free(&keep);
    cp_rank_data_free(&big);
  }
  ok(cp_rank_log_wanted("0,3-5", 4) && !cp_rank_log_wanted("0,3-5", 2) && cp_rank_log_wanted("all", 9) &&
     !cp_rank_log_wanted("none", 0), "rank log lists");
  { /* parts larger than their whole, as a snapshot read while NCCL threads
     * run on can give them (the MPI_Finalize fuzz): bounded or left out
     * in merge.c, where the online and offline summaries both pass */
    cp_path_rec p;
    memset(&p, 0, sizeof p);
    p.calls = 0; p.untimed_calls = 1; p.unseen_calls = 3;
    cp_pstat st;
    cp_pstat_from_rec(&st, &p, 0);
    ok(st.untimed_calls == 0 && st.unseen_calls == 0 && st.ev_min_ns == UINT64_MAX,
       "untimed calls bounded by calls, unseen by untimed (0 calls: 1 untimed, 3 unseen -> 0, 0)");
    p.calls = 5; p.untimed_calls = 2; p.unseen_calls = 3;
    cp_pstat_from_rec(&st, &p, 0);
    ok(st.untimed_calls == 2 && st.unseen_calls == 2, "unseen bounded by untimed (5 calls, 2 untimed, 3 unseen)");
    cp_size_rec e[3] = {
        {1024, 10, 2, 0, 200, 0, 120, 1000, 10, 0, 0, 0, 1},    /* sane */
        {2048, 10, 2, 3, 200, 0, 120, 1000, 10, 0, 0, 0, 1},    /* first-call samples > samples */
        {4096, 10, 2, 0, 200, 0, 120, 1000, 11, 0, 0, 0, 1}};   /* covers more calls than it has */
    p.sizes = e; p.nsizes = 3;
    cp_size_sum cls[CP_SIZE_CLASSES];
    memset(cls, 0, sizeof cls);
    cp_size_add_rec(cls, &p);
    ok(cls[11].calls == 10 && cls[11].est_ns == 1000 && cls[12].calls == 0 && cls[13].calls == 0,
       "a class entry whose parts exceed their whole is left out, the sane one kept");
  }
  {
    /* Every run counter a rank reports reaches the summary summed over the
     * ranks (rank record -> packed set -> merge), and comes over from a
     * snapshot (the MPI layer's way in).  Listed here one by one, not
     * through CP_RUN_COUNTERS (rundata.h), so a counter dropped from that
     * list fails this. */
#define RUN_COUNTERS_BY_HAND(X) \
  X(events_recorded, 1) X(events_pxn, 2) X(events_counted, 3) X(unterminated, 4) \
  X(blacklist_evictions, 5) X(unknown_parent, 6) X(trace_dropped, 7) X(bad_calls, 8) \
  X(gpu_sampled_calls, 9) X(gpu_samples_dropped, 10) X(gpu_samples_deferred, 11) \
  X(gpu_launches_timed, 12) X(gpu_launches_unattributed, 13) X(gpu_launches_skipped, 14) \
  X(gpu_launches_unread, 15) X(gpu_launches_idle, 16)
    cp_run rc = {0};
    rc.nranks = 2;
    rc.ranks = calloc(2, sizeof *rc.ranks);
    spec one[] = {{"A", 50, 1, 10}};
    for (int i = 0; i < 2; i++) {
      mk_rank(&rc.ranks[i], i, one, 1);
      cp_rank_data *r = &rc.ranks[i];
      const uint64_t base = 1000u * (uint64_t)(i + 1);   /* rank 0: 1000 + k, rank 1: 2000 + k */
#define SET(f, k) r->f = base + (k);
      RUN_COUNTERS_BY_HAND(SET)
#undef SET
    }
    cp_summary cs;
    int summed = cp_collate_run(&rc, 64, &cs) == 0, wrong = 0;
#define SUMMED(f, k) if (cs.agg.f != 3000u + 2u * (k)) { wrong++; printf("# agg.%s = %" PRIu64 "\n", #f, (uint64_t)cs.agg.f); }
    if (summed) { RUN_COUNTERS_BY_HAND(SUMMED) }
#undef SUMMED
    ok(summed && !wrong, "every run counter summed over the ranks into the summary");
    if (summed) cp_summary_free(&cs);
    cp_run_free(&rc);
    collprof_snapshot snap;
    memset(&snap, 0, sizeof snap);
#define SNAP(f, k) snap.f = 500u + (k);
    RUN_COUNTERS_BY_HAND(SNAP)
#undef SNAP
    cp_rank_data from;
    int took = cp_rank_from_snapshot(&snap, "app", &from) == 0;
    wrong = 0;
#define TAKEN(f, k) if (from.f != 500u + (k)) { wrong++; printf("# rank.%s = %" PRIu64 "\n", #f, (uint64_t)from.f); }
    if (took) { RUN_COUNTERS_BY_HAND(TAKEN) }
#undef TAKEN
#undef RUN_COUNTERS_BY_HAND
    ok(took && !wrong, "every run counter taken over from a snapshot");
    if (took) cp_rank_data_free(&from);
  }
  cp_summary_free(&s);
  cp_run_free(&run);
  printf("1..%d\n", n_test);
  return n_fail != 0;
}
