/*
 * test_frozen.c — unit test of the frozen-mask list of the collation
 * (collate/frozen.h through collate/pset.h): ranks that froze for one of a
 * few reasons, packed one set per rank, merged in random groupings and
 * orders (as the MPI tree and the offline tool do); the summary must list
 * each reason once with exactly its ranks, as sorted non-adjacent ranges,
 * ordered by lowest rank, whatever the grouping.  The expectation is a
 * plain per-rank table built here, not the code under test.
 */
#include "frozen.h"
#include "pset.h"
#include "tap.h"
#include <stdlib.h>
#include <string.h>

#define NR 300
static const char *REASONS[] = {"", "CUDA graph capture seen, KernelCh off",
                                "CUDA graph capture seen, KernelCh on",
                                "NCCL calls from a second thread, KernelCh off"};
#define NREASON 4

static void mk_rank(cp_rank_data *r, int rank, int why) {
  memset(r, 0, sizeof *r);
  r->rank = rank; r->world_size = NR;
  snprintf(r->host, sizeof r->host, "h%d", rank % 3);
  snprintf(r->mask_frozen, sizeof r->mask_frozen, "%s", REASONS[why]);
  r->gpu_samples_dropped = (uint64_t)rank % 5;
  r->gpu_samples_deferred = (uint64_t)rank % 7;
  r->command = strdup("app");
}

/* Merge the sets in[0, n) in random groups of 1..4 until one is left; the
 * last merge fills sum.  Consumes in. */
static int merge_randomly(cp_pbuf *in, size_t n, cp_summary *sum, unsigned *seed) {
  while (n > 4) {
    size_t k = 1 + (size_t)rand_r(seed) % 4, at = (size_t)rand_r(seed) % (n - k + 1);
    cp_pbuf out;
    if (cp_pset_merge(in + at, k, NULL, &out, 0, NULL, NULL, NULL) != 0) return -1;
    for (size_t i = 0; i < k; i++) cp_pbuf_free(&in[at + i]);
    in[at] = out;
    memmove(in + at + 1, in + at + k, (n - at - k) * sizeof *in);
    n -= k - 1;
  }
  int rc = cp_pset_merge(in, n, NULL, NULL, 0, sum, NULL, NULL);
  for (size_t i = 0; i < n; i++) cp_pbuf_free(&in[i]);
  return rc;
}

/* The summary's list against the per-rank table. */
static int list_matches(const cp_summary *s, const int *why, const char *label) {
  int good = 1, seen[NR] = {0};
  int32_t prev_low = INT32_MIN;
  for (size_t g = 0; g < s->nfrozen; g++) {
    const cp_frozen *z = &s->frozen[g];
    int w = 0;
    for (int i = 1; i < NREASON; i++) if (!strcmp(z->reason, REASONS[i])) w = i;
    if (!w || !z->nranges) { diag("%s: odd entry '%s'", label, z->reason); good = 0; continue; }
    if (z->ranges[0].lo <= prev_low) { diag("%s: not by lowest rank", label); good = 0; }
    prev_low = z->ranges[0].lo;
    uint64_t count = 0;
    for (size_t j = 0; j < z->nranges; j++) {
      const cp_rank_range *r = &z->ranges[j];
      if (r->lo > r->hi || (j && r->lo <= z->ranges[j - 1].hi + 1)) {
        diag("%s: ranges not sorted/coalesced", label); good = 0;
      }
      for (int32_t k = r->lo; k <= r->hi && k >= 0 && k < NR; k++, count++) {
        if (why[k] != w) { diag("%s: rank %d listed under '%s'", label, k, z->reason); good = 0; }
        seen[k]++;
      }
    }
    if (count != z->nranks) { diag("%s: nranks %llu, ranges hold %llu", label,
                                   (unsigned long long)z->nranks, (unsigned long long)count); good = 0; }
  }
  for (int k = 0; k < NR; k++)
    if (seen[k] != (why[k] != 0)) { diag("%s: rank %d listed %d times", label, k, seen[k]); good = 0; }
  return good;
}

int main(void) {
  unsigned seed = 12345;
  int why[NR];
  cp_rank_data ranks[NR];
  /* blocks of equal reasons (as whole jobs freeze) with scattered others */
  for (int k = 0; k < NR; k++) {
    why[k] = k < 100 ? 1 : k < 150 ? 0 : (rand_r(&seed) % NREASON);
    mk_rank(&ranks[k], k, why[k]);
  }
  uint64_t want_dropped = 0, want_deferred = 0;
  for (int k = 0; k < NR; k++) { want_dropped += (uint64_t)k % 5; want_deferred += (uint64_t)k % 7; }

  for (int round = 0; round < 6; round++) {
    cp_pbuf *in = calloc(NR, sizeof *in);
    int built = 1;
    /* rounds after the first: the ranks' sets in a shuffled order */
    int order[NR];
    for (int k = 0; k < NR; k++) order[k] = k;
    for (int k = NR - 1; round && k > 0; k--) { int j = rand_r(&seed) % (k + 1), t = order[k]; order[k] = order[j]; order[j] = t; }
    for (int k = 0; k < NR; k++) built &= cp_pset_from_rank(&ranks[order[k]], 64, &in[k], NULL) == 0;
    ok(built, "round %d: every rank's set packs", round);
    cp_summary sum;
    memset(&sum, 0, sizeof sum);
    char label[32];
    snprintf(label, sizeof label, "round %d", round);
    ok(merge_randomly(in, NR, &sum, &seed) == 0, "%s: merges", label);
    ok(list_matches(&sum, why, label), "%s: one entry per reason, exactly its ranks", label);
    is_u(sum.agg.gpu_samples_dropped, want_dropped, "%s: gpu_samples_dropped summed", label);
    is_u(sum.agg.gpu_samples_deferred, want_deferred, "%s: gpu_samples_deferred summed", label);
    is_u(sum.frozen && sum.nfrozen ? sum.frozen[0].ranges[0].hi : 0, 99, "%s: ranks 0-99 one range", label);
    cp_summary_free(&sum);
    free(in);
  }

  /* nobody froze: no list at all */
  cp_rank_data calm;
  mk_rank(&calm, 0, 0);
  cp_pbuf one;
  cp_summary sum;
  memset(&sum, 0, sizeof sum);
  ok(cp_pset_from_rank(&calm, 64, &one, NULL) == 0 && cp_pset_merge(&one, 1, NULL, NULL, 0, &sum, NULL, NULL) == 0,
     "a rank that did not freeze merges");
  is_u(sum.nfrozen, 0, "...and lists no frozen mask");
  cp_summary_free(&sum);
  cp_pbuf_free(&one);
  cp_rank_data_free(&calm);
  for (int k = 0; k < NR; k++) cp_rank_data_free(&ranks[k]);
  return done_testing();
}
