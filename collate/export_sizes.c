/*
 * export_sizes.c — message sizes of the Coll/P2p paths over all ranks
 * (collprof-collate --sizes): per global path, one row per log2 size class
 * with calls, GPU samples, the GPU time per call and the bandwidth it
 * gives, as nccl-tests prints per size.
 *
 * Each rank counts a Coll/P2p path's calls and GPU samples per log2 size
 * class and estimates each class (src/gpu_estimate.h; the rank file's
 * "gpuSizes"); the collation adds the classes up over the ranks as it adds
 * the paths' numbers (merge.c, cp_size_add_rec; pset_codec.h carries them up the
 * MPI tree), so the summary holds them (cp_summary_sizes) online and
 * offline alike.  This view prints them, so a sweep's small and large
 * calls are seen apart; summary.log and summary.json show the same.
 *
 * Per class, over the ranks, from each rank's own estimate of the class
 * (written by the plugin beside its samples, cp_gpu_estimate_classes), so
 * the classes add up to the summary's GPU time of the path:
 *   Calls     every call of that size (exact: counted, not sampled);
 *   Samples   calls with GPU time (KernelCh on), First of them first-call
 *             samples (NCCL's set-up, late peers: mask_control.h);
 *   Outliers  periodic samples the plugin counts once, not in any mean: a
 *             class's longest one over CP_GCLS_OUTLIER times the mean of
 *             its others, or a lone one that far above what the
 *             neighbouring classes lend;
 *   Borrowed  calls of classes without a periodic sample of their own,
 *             given the mean of the nearest sampled classes (geometric in
 *             size between them);
 *   GPU[s]    the class's GPU time: every call sampled, their sum; else
 *             the first-call and outlier samples once and the class's mean
 *             (own or lent) for its other calls; "-" where a rank has
 *             calls of it no estimate covers (a path without any periodic
 *             sample on that rank: the summary lends those the mean of all
 *             ranks' samples) or a file from before these numbers;
 *   GPU/call  the mean of the periodic samples but the outliers, "-"
 *             without one;
 *   bandwidth S / GPU/call with S = the class's smallest size (x ranks
 *             where nccl-tests counts so) and nccl-tests' bus factor for
 *             the summary's communicator size (reduce.h, cp_bw_factors):
 *             exact for power-of-two sizes, a lower bound otherwise.
 * Paths in global id order, classes from the smallest, so two exports of
 * one run are identical.  A file name ending in .json gets the numbers as
 * JSON (collprof-collate(1)).
 */
#include "collprof.h"
#include "export.h"
#include "gpu_estimate.h"
#include "reduce.h"
#include "report.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void cp_size_row_of(const cp_summary *s, const cp_gpath *g, unsigned k, const cp_size_sum *c, cp_size_row *r) {
  r->lo = k ? 1ull << (k - 1) : 0;
  r->gpu_ns = !c->uncovered ? (double)c->est_ns : -1;   /* own samples or lent */
  r->call_ns = r->algbw = r->busbw = -1;
  if (!c->per_n) return;
  r->call_ns = (double)c->per_ns / (double)c->per_n;
  double mult, factor;
  if (k && r->call_ns > 0 && cp_bw_factors(g->leaf_type, g->leaf_func, s->agg.bw_nranks, &mult, &factor)) {
    r->algbw = (double)r->lo * mult / r->call_ns;   /* bytes per ns = GB/s */
    r->busbw = r->algbw * factor;
  }
}

typedef struct { double gpu_ns; size_t i; } by_gpu;
static int by_gpu_cmp(const void *x, const void *y) {
  const by_gpu *a = x, *b = y;
  if (a->gpu_ns != b->gpu_ns) return a->gpu_ns > b->gpu_ns ? -1 : 1;
  return a->i < b->i ? -1 : a->i > b->i;
}

size_t *cp_sized_by_gpu(const cp_summary *s) {
  by_gpu *o = s->nsized ? malloc(s->nsized * sizeof *o) : NULL;
  size_t *idx = o ? malloc(s->nsized * sizeof *idx) : NULL;
  if (!idx) { free(o); return NULL; }
  for (size_t i = 0; i < s->nsized; i++) {
    cp_gderived d;
    cp_gpath_derive(s, &s->paths[s->sized[i].id], &d);
    o[i] = (by_gpu){d.gpu_est_ns, i};
  }
  qsort(o, s->nsized, sizeof *o, by_gpu_cmp);
  for (size_t i = 0; i < s->nsized; i++) idx[i] = o[i].i;
  free(o);
  return idx;
}

void cp_size_text(uint64_t lo, char *b, size_t n) {
  static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (!lo) { snprintf(b, n, "unsized"); return; }
  unsigned u = 0;
  while (lo >= 1024 && lo % 1024 == 0 && u + 1 < sizeof unit / sizeof *unit) lo /= 1024, u++;
  snprintf(b, n, "%" PRIu64 " %s", lo, unit[u]);
}

void cp_size_table(FILE *f, const cp_summary *s, const cp_gpath *g, const cp_size_sum *c) {
  fprintf(f, "\nID %" PRId64 "  %s\n", (int64_t)(g - s->paths), g->path);
  fprintf(f, "%10s | %12s | %9s | %7s | %8s | %12s | %13s | %12s | %12s | %12s\n", "Size", "Calls", "Samples",
          "First", "Outliers", "Borrowed", "GPU[s]", "GPU/call[us]", "AlgBW[GB/s]", "BusBW[GB/s]");
  fprintf(f, "----------------------------------------------------------------------------------------------------"
             "----------------------------\n");
  for (unsigned k = 0; k < CP_GCLS; k++) {
    const cp_size_sum *e = &c[k];
    if (!e->calls && !e->samples) continue;
    cp_size_row r;
    cp_size_row_of(s, g, k, e, &r);
    char sz[32], tot[32] = "-", per[32] = "-", alg[32] = "-", bus[32] = "-";
    cp_size_text(r.lo, sz, sizeof sz);
    if (r.gpu_ns >= 0) snprintf(tot, sizeof tot, "%.6f", r.gpu_ns / 1e9);
    if (r.call_ns >= 0) snprintf(per, sizeof per, "%.3f", r.call_ns / 1e3);
    if (r.algbw >= 0) snprintf(alg, sizeof alg, "%.3f", r.algbw);
    if (r.busbw >= 0) snprintf(bus, sizeof bus, "%.3f", r.busbw);
    fprintf(f, "%10s | %12" PRIu64 " | %9" PRIu64 " | %7" PRIu64 " | %8" PRIu64 " | %12" PRIu64
               " | %13s | %12s | %12s | %12s\n",
            sz, e->calls, e->samples, e->first, e->outliers, e->lent, tot, per, alg, bus);
  }
}

/* The same numbers as JSON (a file name ending in .json): unknown ones
 * null, times in ns, bandwidths in GB/s. */
static void json_num(FILE *f, const char *key, double v, const char *fmt) {
  fprintf(f, ",\"%s\":", key);
  if (v >= 0) fprintf(f, fmt, v);
  else fputs("null", f);
}
void cp_size_json(FILE *f, const cp_summary *s, const cp_gpath *g, const cp_size_sum *c) {
  fputc('[', f);
  int n = 0;
  for (unsigned k = 0; k < CP_GCLS; k++) {
    const cp_size_sum *e = &c[k];
    if (!e->calls && !e->samples) continue;
    cp_size_row r;
    cp_size_row_of(s, g, k, e, &r);
    fprintf(f, "%s{\"bytes\":%" PRIu64 ",\"calls\":%" PRIu64 ",\"samples\":%" PRIu64 ",\"firstSamples\":%" PRIu64
               ",\"outliers\":%" PRIu64 ",\"borrowedCalls\":%" PRIu64,
            n++ ? "," : "", r.lo, e->calls, e->samples, e->first, e->outliers, e->lent);
    json_num(f, "gpuNs", r.gpu_ns, "%.0f");
    json_num(f, "callNs", r.call_ns, "%.3f");
    json_num(f, "algbwGBs", r.algbw, "%.6f");
    json_num(f, "busbwGBs", r.busbw, "%.6f");
    fputc('}', f);
  }
  fputc(']', f);
}
static void json_path(FILE *f, const cp_summary *s, const cp_gpath *g, const cp_size_sum *c, int first) {
  fprintf(f, "%s\n{\"id\":%" PRId64 ",\"path\":", first ? "" : ",", (int64_t)(g - s->paths));
  cp_json_str(f, g->path);
  fputs(",\"sizes\":", f);
  cp_size_json(f, s, g, c);
  fputc('}', f);
}

void cp_size_legend(FILE *f, const cp_summary *s) {
  fprintf(f,
          "Size      a log2 class: [size, 2 x size) bytes per rank and call\n"
          "Calls     every call, summed over ranks\n"
          "Samples   calls with GPU time (KernelCh); First: of them, first-call samples\n"
          "Outliers  periodic samples over %.0fx the mean of their rank's others (or, alone in their\n"
          "          class, over %.0fx what the neighbouring classes lend), counted once\n"
          "Borrowed  calls of a class without a periodic sample, given its neighbours' mean\n"
          "GPU[s]    the class's GPU time: exact where every call was sampled, else the first-call\n"
          "          and outlier samples once and each rank's mean (own or lent) for its other calls;\n"
          "          \"-\": a rank's calls that no sample of the path on that rank stands for\n"
          "GPU/call  a typical call's: the mean of the periodic samples but the outliers\n"
          "AlgBW     nccl-tests' from GPU/call at the class's smallest size (exact for power-of-two\n"
          "BusBW     sizes, a lower bound otherwise), ",
          CP_GCLS_OUTLIER, CP_GCLS_OUTLIER);
  if (s->agg.bw_nranks > 0) fprintf(f, "communicators of %d ranks\n", s->agg.bw_nranks);
  else fprintf(f, "P2p only (Coll: the communicators' sizes differ)\n");
}

static int ends_with(const char *s, const char *t) {
  size_t a = strlen(s), b = strlen(t);
  return a >= b && !strcmp(s + a - b, t);
}

int cp_export_sizes(const cp_summary *s, const char *out) {
  int rc = 0;
  FILE *f = cp_export_open(out);
  if (f && out && ends_with(out, ".json")) {
    fprintf(f, "{\"tool\":\"collprof\",\"version\":\"%s\",\"outlierFactor\":%.1f,\"bwRanks\":%d,\"paths\":[",
            COLLPROF_VERSION, CP_GCLS_OUTLIER, s->agg.bw_nranks > 0 ? s->agg.bw_nranks : 0);
    int first = 1;
    for (size_t i = 0; i < s->nsized; i++) {
      json_path(f, s, &s->paths[s->sized[i].id], s->sized[i].c, first);
      first = 0;
    }
    fputs("\n]}\n", f);
    rc = cp_export_close(f, out);
  } else if (f) {
    fprintf(f, "collprof %s - message sizes of the Coll/P2p paths, all ranks\n", COLLPROF_VERSION);
    cp_size_legend(f, s);
    for (size_t i = 0; i < s->nsized; i++) cp_size_table(f, s, &s->paths[s->sized[i].id], s->sized[i].c);
    rc = cp_export_close(f, out);
  } else {
    rc = -1;
  }
  return rc;
}
