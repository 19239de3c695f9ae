/*
 * test_gpu_estimate.c — TAP unit test of src/gpu_estimate.c: a rank's GPU
 * time estimate of a path from its calls and samples per size class.  The
 * wanted numbers are worked out here from the rule in gpu_estimate.h (each
 * class's periodic mean for its own calls, first-call samples and outliers
 * once, missing classes geometric between sampled ones and flat beyond).
 */
#include "gpu_estimate.h"
#include "tap.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* a sample through the module's own entry (the plugin's path) */
static void smp(cp_gcls *g, unsigned k, uint64_t ns, int first) {
  cp_gcls_add_sample(g, k ? 1ull << (k - 1) : 0, ns, first);
}

/* as the snapshot does: class 0 from the path's calls, then the estimate;
 * the borrowed calls of the latest one in b_last */
static uint64_t b_last;
static void est(cp_gcls *g, uint64_t calls, uint64_t *e, uint64_t *c, uint64_t *o) {
  cp_gcls_fill_unsized(g, calls);
  cp_gpu_estimate(g, e, c, o, &b_last);
}

int main(void) {
  uint64_t e, c, o;

  /* class of a size: 0 bytes, powers of two, the last class */
  ok(cp_gcls_of(0) == 0 && cp_gcls_of(1) == 1 && cp_gcls_of(2) == 2 && cp_gcls_of(3) == 2 &&
     cp_gcls_of(1u << 20) == 21 && cp_gcls_of((1u << 21) - 1) == 21 && cp_gcls_of(UINT64_MAX) == CP_GCLS - 1,
     "size classes: [2^(k-1), 2^k) is class k, 0 bytes class 0, the top clamped");

  { /* one class: a first-call sample once, the periodic mean for the rest */
    cp_gcls g; memset(&g, 0, sizeof g);
    g.c[5].calls = 10;
    smp(&g, 5, 1000, 1); smp(&g, 5, 100, 0); smp(&g, 5, 120, 0);
    est(&g, 10, &e, &c, &o);
    is_u(e, 1000 + 110 * 9, "first-call sample once, periodic mean x the other 9 calls");
    ok(c == 10 && o == 0, "covers all 10 calls, no outlier");
    is_u(b_last, 0, "one sampled class: no call borrows");
  }
  { /* every call sampled: exact, whatever the values */
    cp_gcls g; memset(&g, 0, sizeof g);
    g.c[3].calls = 3; g.c[9].calls = 2;
    smp(&g, 3, 7, 1); smp(&g, 3, 70000, 0); smp(&g, 3, 9, 0); smp(&g, 9, 500, 0); smp(&g, 9, 501, 0);
    est(&g, 5, &e, &c, &o);
    ok(e == 7 + 70000 + 9 + 500 + 501 && c == 5 && o == 0, "every call sampled: the exact sum, no outlier taken out");
    is_u(b_last, 0, "every call sampled: none borrowed");
  }
  { /* outlier: > 10x the mean of the class's other periodic samples */
    cp_gcls g; memset(&g, 0, sizeof g);
    g.c[21].calls = 20;
    smp(&g, 21, 50, 0); smp(&g, 21, 60, 0); smp(&g, 21, 40, 0); smp(&g, 21, 33000000, 0);
    est(&g, 20, &e, &c, &o);
    ok(e == 33000000 + 50 * 19 && c == 20 && o == 1, "a 33 ms sample among 50 ns ones counts once (got %" PRIu64 ")", e);
    memset(&g, 0, sizeof g);
    g.c[21].calls = 20;
    smp(&g, 21, 50, 0); smp(&g, 21, 60, 0); smp(&g, 21, 40, 0); smp(&g, 21, 490, 0);
    est(&g, 20, &e, &c, &o);
    ok(e == (50 + 60 + 40 + 490) / 4 * 20 && o == 0, "490 against a mean of 50 (< 10x): an ordinary sample");
    memset(&g, 0, sizeof g);
    g.c[21].calls = 20;
    smp(&g, 21, 50, 1); smp(&g, 21, 33000000, 0);
    est(&g, 20, &e, &c, &o);
    ok(e == 50 + 33000000ull * 19 && o == 0, "a lone periodic sample of a lone class is never an outlier (nothing to compare)");
  }
  { /* a lone periodic sample against its neighbouring classes (the H100
     * broadcast: 6.8 ms at 64 KiB between 1.3 us at 32 B and 3.3 us at 256 KiB) */
    cp_gcls g; memset(&g, 0, sizeof g);
    for (unsigned k = 4; k <= 19; k++) g.c[k].calls = 25;
    smp(&g, 6, 1344, 0); smp(&g, 17, 6786368, 0); smp(&g, 19, 3328, 0);
    est(&g, 16 * 25, &e, &c, &o);
    /* class 17 borrows between 6 (1344) and 19 (3328), as do the others */
    double m17 = 1344.0 * pow(3328.0 / 1344.0, 11.0 / 13.0);
    double want = 6786368.0 + m17 * 24;
    for (unsigned k = 4; k <= 19; k++) {
      if (k == 17) continue;
      double m = k <= 6 ? 1344.0 : k >= 19 ? 3328.0 : 1344.0 * pow(3328.0 / 1344.0, (k - 6) / 13.0);
      want += m * 25;
    }
    ok(o == 1 && c == 16 * 25 && fabs((double)e - want) <= 16,
       "a lone 6.8 ms sample at 2000x what its neighbours lend counts once, its class borrows "
       "(got %" PRIu64 ", want %.0f, %" PRIu64 " outliers)", e, want, o);
    is_u(b_last, 13 * 25 + 24, "borrowed: the 13 unsampled classes' calls and the outlier class's other 24");
    memset(&g, 0, sizeof g);
    for (unsigned k = 4; k <= 19; k++) g.c[k].calls = 25;
    smp(&g, 6, 1344, 0); smp(&g, 17, 9000, 0); smp(&g, 19, 3328, 0);
    est(&g, 16 * 25, &e, &c, &o);
    ok(o == 0, "a lone sample under 10x what its neighbours lend is an ordinary one (%" PRIu64 " outliers)", o);
    memset(&g, 0, sizeof g);
    for (unsigned k = 4; k <= 19; k++) g.c[k].calls = 25;
    smp(&g, 6, 1344, 0); smp(&g, 19, 6786368, 0);
    est(&g, 16 * 25, &e, &c, &o);
    ok(o == 0, "the largest sampled class is never a lone outlier (nothing above it: sizes grow)");
  }
  { /* classes without periodic samples: geometric between, flat beyond */
    cp_gcls g; memset(&g, 0, sizeof g);
    g.c[3].calls = 4; g.c[7].calls = 4; g.c[5].calls = 4; g.c[9].calls = 2; g.c[1].calls = 3;
    smp(&g, 3, 100, 0); smp(&g, 7, 1600, 0);
    smp(&g, 5, 9999, 1);    /* class 5 has only a first-call sample: once, the rest borrowed */
    est(&g, 17 + 6, &e, &c, &o);   /* + 6 calls without bytes (class 0) */
    uint64_t want = 100 * 4 + 1600 * 4 + 9999 + 400 * 3 + 1600 * 2 + 100 * 3 + 100 * 6;
    ok(llabs((long long)e - (long long)want) <= 1 && c == 23,
       "class 5 between 3 (100) and 7 (1600): 400; 9 above: 1600; 1 and 0 below: 100 (got %" PRIu64 ", want %" PRIu64 ")",
       e, want);
    is_u(b_last, 3 + 2 + 3 + 6, "borrowed: class 5 but its first-call sample, 9, 1 and 0 (sampled 3 and 7 not)");
    memset(&g, 0, sizeof g);
    g.c[10].calls = 3; g.c[13].calls = 3; g.c[11].calls = 1;
    smp(&g, 10, 1000, 0); smp(&g, 13, 8000, 0);
    est(&g, 7, &e, &c, &o);
    want = 3000 + 24000 + 2000;
    ok(llabs((long long)e - (long long)want) <= 1, "one class up of three doublings: 1000 x 8^(1/3) = 2000 (got %" PRIu64 ")", e);
  }
  { /* no periodic sample at all: only the first-call samples are covered */
    cp_gcls g; memset(&g, 0, sizeof g);
    g.c[4].calls = 30; g.c[8].calls = 5;
    smp(&g, 4, 5000000, 1);
    est(&g, 35, &e, &c, &o);
    ok(e == 5000000 && c == 1 && o == 0, "only a first-call sample: it alone, 1 call covered (the collator pools the rest)");
    is_u(b_last, 0, "no periodic sample anywhere: nothing lent here (the collator's pooled mean, counted there)");
  }
  { /* a damaged class (first part above its total) loses its first part */
    cp_gcls g; memset(&g, 0, sizeof g);
    g.c[6].calls = 4; g.c[6].samples = 2; g.c[6].ns = 200; g.c[6].first_samples = 3; g.c[6].first_ns = 100;
    g.c[6].max_ns = 100;
    est(&g, 4, &e, &c, &o);
    ok(e == 400 && c == 4, "first-call part larger than the samples: treated as periodic (got %" PRIu64 ")", e);
  }
  { /* property: random tables, all calls sampled -> exact; otherwise the
     * estimate lies within [min class mean, max single sample] x calls */
    srand(7);
    int bad_exact = 0, bad_bound = 0;
    for (int it = 0; it < 2000; it++) {
      cp_gcls g; memset(&g, 0, sizeof g);
      uint64_t calls = 0, sum = 0, lo = UINT64_MAX, hi = 0;
      int all = it % 2;
      for (unsigned k = 1; k < CP_GCLS; k++) {
        if (rand() % 4) continue;
        uint64_t n = 1 + (uint64_t)(rand() % 20);
        g.c[k].calls = n; calls += n;
        uint64_t s = all ? n : (uint64_t)(rand() % (int)(n + 1));
        for (uint64_t i = 0; i < s; i++) {
          uint64_t v = 1 + (uint64_t)(rand() % 100000);
          smp(&g, k, v, i == 0 && rand() % 3 == 0);
          sum += v;
          if (v < lo) lo = v;
          if (v > hi) hi = v;
        }
      }
      if (!calls) continue;
      est(&g, calls, &e, &c, &o);
      if (all && (e != sum || c != calls)) bad_exact++;
      if (!all && sum && lo != UINT64_MAX && c == calls && (e + calls < lo * calls || e > hi * calls + calls)) bad_bound++;
    }
    ok(bad_exact == 0, "2000 random tables: all sampled gives the exact sum (%d wrong)", bad_exact);
    ok(bad_bound == 0, "random tables: estimate within [smallest, largest sample] x calls (%d outside)", bad_bound);
  }
  { /* class by class (cp_gpu_estimate_classes): the lone outlier's class
     * holds its outlier and its lent calls, a borrowing class its lent
     * calls, and the classes add up to the path's numbers */
    cp_gcls g; memset(&g, 0, sizeof g);
    for (unsigned k = 4; k <= 19; k++) g.c[k].calls = 25;
    smp(&g, 6, 1344, 0); smp(&g, 17, 6786368, 0); smp(&g, 19, 3328, 0);
    smp(&g, 6, 1350, 1);
    est(&g, 16 * 25, &e, &c, &o);
    cp_gcls_est ce[CP_GCLS];
    cp_gpu_estimate_classes(&g, ce);
    uint64_t sn = 0, sc = 0, so = 0, sl = 0;
    for (unsigned k = 0; k < CP_GCLS; k++) sn += ce[k].ns, sc += ce[k].calls, so += ce[k].outliers, sl += ce[k].lent;
    ok(sn == e && sc == c && so == o && sl == b_last,
       "classes add up to the path: ns %" PRIu64 "/%" PRIu64 ", calls %" PRIu64 "/%" PRIu64 ", outliers, lent", sn, e, sc, c);
    ok(ce[17].outliers == 1 && ce[17].outlier_ns == 6786368 && ce[17].lent == 24 && ce[17].calls == 25,
       "class 17: its lone 6.8 ms sample an outlier, its other 24 calls lent");
    double m17 = 1344.0 * pow(3328.0 / 1344.0, 11.0 / 13.0);
    ok(fabs((double)ce[17].ns - (6786368.0 + 24 * m17)) <= 1, "class 17: the outlier once and 24 x the lent mean %.1f (got %" PRIu64 ")",
       m17, ce[17].ns);
    ok(ce[6].lent == 0 && ce[6].outliers == 0 && llabs((long long)ce[6].ns - (long long)(1350 + 1344 * 24)) <= 1,
       "class 6: its first-call sample once and its own periodic mean for the other 24 (got %" PRIu64 ")", ce[6].ns);
    ok(ce[10].lent == 25 && ce[4].lent == 25 && ce[19].lent == 0 && ce[3].calls == 0,
       "classes without a sample lend all their calls; a class without calls covers none");
    memset(&g, 0, sizeof g);
    g.c[4].calls = 30; g.c[8].calls = 5;
    smp(&g, 4, 5000000, 1);
    est(&g, 35, &e, &c, &o);
    cp_gpu_estimate_classes(&g, ce);
    ok(ce[4].calls == 1 && ce[4].ns == 5000000 && ce[8].calls == 0 && ce[8].ns == 0,
       "no periodic sample anywhere: each class covers only its first-call samples");
    /* a lone outlier past 2^53 (wild GPU timestamps): its ns exact, never
     * more than the class's periodic ns (a reader rejects an entry that is) */
    memset(&g, 0, sizeof g);
    for (unsigned k = 4; k <= 8; k++) g.c[k].calls = 5;
    smp(&g, 4, 1000, 0); smp(&g, 6, UINT64_MAX - 616, 0); smp(&g, 8, 3000, 0);
    est(&g, 25, &e, &c, &o);
    cp_gpu_estimate_classes(&g, ce);
    ok(ce[6].outliers == 1 && ce[6].outlier_ns == UINT64_MAX - 616 && ce[6].outlier_ns <= g.c[6].ns - g.c[6].first_ns,
       "a lone outlier of 2^64 - 617 ns: its ns exactly (got %" PRIu64 ")", ce[6].outlier_ns);
    /* rounding: three classes of 4.5 ns each (samples 1 and 2, 3 calls)
     * add up to the rounded total, 14, not 3 x 5 */
    memset(&g, 0, sizeof g);
    for (unsigned k = 2; k <= 4; k++) { g.c[k].calls = 3; smp(&g, k, 1, 0); smp(&g, k, 2, 0); }
    est(&g, 9, &e, &c, &o);
    cp_gpu_estimate_classes(&g, ce);
    ok(ce[2].ns + ce[3].ns + ce[4].ns == e && e == 14, "classes rounded by running sum add up to the total (%" PRIu64 ")", e);
  }
  /* cp_gcls_calls_from: the calls a timed launch's mean stands for */
  {
    cp_gcls g;
    memset(&g, 0, sizeof g);
    g.c[cp_gcls_of(8)].calls = 5;          /* [8, 16) */
    g.c[cp_gcls_of(65535)].calls = 7;      /* [32 KiB, 64 KiB) */
    g.c[cp_gcls_of(65536)].calls = 11;     /* [64 KiB, 128 KiB) */
    g.c[cp_gcls_of(1u << 30)].calls = 13;  /* [1 GiB, 2 GiB) */
    g.c[CP_GCLS - 1].calls = 17;           /* the last class, unbounded */
    cp_gcls_fill_unsized(&g, 5 + 7 + 11 + 13 + 17 + 2);   /* 2 of unknown size */
    ok(cp_gcls_calls_from(&g, 0) == 55, "calls from 0 bytes: all 55");
    ok(cp_gcls_calls_from(&g, 65536) == 2 + 11 + 13 + 17, "calls from 64 KiB: the classes from 64 KiB and the unsized (%llu)",
       (unsigned long long)cp_gcls_calls_from(&g, 65536));
    ok(cp_gcls_calls_from(&g, 65537) == 2 + 11 + 13 + 17, "calls from 64 KiB + 1: the class holding it counts whole");
    ok(cp_gcls_calls_from(&g, 1ull << 40) == 2 + 17, "calls from 1 TiB: the unbounded last class and the unsized");
  }
  return done_testing();
}
