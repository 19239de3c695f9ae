/*
 * gpu_estimate.c — per-size-class GPU samples and the rank's estimate of a
 * path's GPU time (gpu_estimate.h).  Runs at sample time (one class entry)
 * and at snapshot time (the estimate), never per event otherwise.
 */
#include <string.h>   /* before the pragma: libc's functions must not be declared hidden */
#pragma GCC visibility push(hidden)
#include "gpu_estimate.h"
#include "tls.h"

void cp_gcls_add_sample(cp_gcls *g, uint64_t bytes, uint64_t ns, int first) {
  cp_gcls_ent *e = &g->c[cp_gcls_of(bytes)];
  cp_inc(&e->samples, 1);
  cp_inc(&e->ns, ns);
  if (first) {
    cp_inc(&e->first_samples, 1);
    cp_inc(&e->first_ns, ns);
  } else if (ns > cp_ld(&e->max_ns)) {
    __atomic_store_n(&e->max_ns, ns, __ATOMIC_RELAXED);
  }
}

void cp_gcls_add(cp_gcls *into, const cp_gcls *from) {
  for (unsigned k = 0; k < CP_GCLS; k++) {
    cp_gcls_ent *a = &into->c[k];
    const cp_gcls_ent *b = &from->c[k];
    a->calls += cp_ld(&b->calls);
    a->samples += cp_ld(&b->samples);
    a->ns += cp_ld(&b->ns);
    a->first_samples += cp_ld(&b->first_samples);
    a->first_ns += cp_ld(&b->first_ns);
    uint64_t m = cp_ld(&b->max_ns);
    if (m > a->max_ns) a->max_ns = m;
    a->lean += cp_ld(&b->lean);
    a->seen += cp_ld(&b->seen);
  }
}

/* square root by Newton's method (the plugin links no libm) */
static double sqrt_nr(double x) {
  if (x <= 0) return 0;
  double y = x > 1 ? x : 1;
  for (int i = 0; i < 60; i++) {
    double z = 0.5 * (y + x / y);
    if (z == y) break;
    y = z;
  }
  return y;
}

/* (saturated: a sample of wild GPU timestamps times the class's calls may
 * pass 2^64, where the conversion would be undefined) */
static uint64_t round_u64(double v) {
  return v <= 0 ? 0 : v >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)(v + 0.5);
}

/* A class's value from the classes that have one (gpu_estimate.h): its
 * mean here, a rate of events per call in lean_estimate.c. */
double cp_gcls_borrow(unsigned k, const unsigned *ks, const double *ms, unsigned n) {
  unsigned i = 0;
  while (i < n && ks[i] < k) i++;
  if (i == 0) return ms[0];          /* below the smallest: flat */
  if (i == n) return ms[n - 1];      /* above the largest: flat */
  double ml = ms[i - 1], mh = ms[i], t = (double)(k - ks[i - 1]) / (double)(ks[i] - ks[i - 1]);
  if (ml <= 0 || mh <= 0) return ml + (mh - ml) * t;
  /* geometric: ml x (mh/ml)^t, by repeated square roots (no libm) */
  double r = mh / ml, f = 1, w = 0.5;
  for (int b = 0; b < 30 && t > 0; b++, w /= 2) {
    r = sqrt_nr(r);
    if (t >= w) { f *= r; t -= w; }
  }
  return ml * f;
}

void cp_gcls_fill_unsized(cp_gcls *g, uint64_t calls) {
  uint64_t held = 0;
  for (unsigned k = 1; k < CP_GCLS; k++) held += g->c[k].calls;
  g->c[0].calls = calls > held ? calls - held : 0;
}

uint64_t cp_gcls_calls_from(const cp_gcls *g, uint64_t min_bytes) {
  uint64_t n = g->c[0].calls;
  for (unsigned k = 1; k < CP_GCLS; k++)   /* class k: [2^(k-1), 2^k), the last one unbounded */
    if (k == CP_GCLS - 1 || k >= 64 || (1ull << k) > min_bytes) n += g->c[k].calls;
  return n;
}

/* Is class k's lone periodic sample, of mean m, an outlier by its
 * neighbours (gpu_estimate.h)?  ks/ms: every class with a mean, k's too. */
static int lone_outlier(unsigned k, double m, const unsigned *ks, const double *ms, unsigned n) {
  unsigned oks[CP_GCLS], on = 0, below = 0, above = 0;
  double oms[CP_GCLS];
  for (unsigned i = 0; i < n; i++) {
    if (ks[i] == k) continue;
    below += ks[i] < k;
    above += ks[i] > k;
    oks[on] = ks[i]; oms[on] = ms[i]; on++;
  }
  if (!below || !above) return 0;
  const double b = cp_gcls_borrow(k, oks, oms, on);
  return b > 0 && m > CP_GCLS_OUTLIER * b;
}

void cp_gpu_estimate_classes(const cp_gcls *g, cp_gcls_est out[CP_GCLS]) {
  double once_ns[CP_GCLS], mean[CP_GCLS];   /* mean < 0: no periodic sample left */
  uint64_t once_n[CP_GCLS], np[CP_GCLS];    /* np: periodic samples left */
  uint64_t left_ns[CP_GCLS];                /* their ns, exact (a double is not past 2^53) */
  unsigned ks[CP_GCLS], n = 0;              /* the classes with a mean, ascending */
  double ms[CP_GCLS], est[CP_GCLS];
  memset(out, 0, CP_GCLS * sizeof *out);
  for (unsigned k = 0; k < CP_GCLS; k++) {
    cp_gcls_ent e = g->c[k];
    once_ns[k] = 0; once_n[k] = 0; mean[k] = -1; np[k] = 0; est[k] = 0; left_ns[k] = 0;
    if (e.samples >= e.calls) {              /* every call sampled (or none there): exact */
      est[k] = (double)e.ns;
      out[k].calls = e.calls;
      continue;
    }
    if (e.first_samples > e.samples || e.first_ns > e.ns) e.first_samples = e.first_ns = 0;
    uint64_t p = e.samples - e.first_samples;
    double pns = (double)(e.ns - e.first_ns);
    once_ns[k] = (double)e.first_ns;
    once_n[k] = e.first_samples;
    if (p >= 2 && e.max_ns <= e.ns - e.first_ns) {
      double rest = (pns - (double)e.max_ns) / (double)(p - 1);
      if ((double)e.max_ns > CP_GCLS_OUTLIER * rest) {
        once_ns[k] += (double)e.max_ns; once_n[k]++;
        pns -= (double)e.max_ns; p--;
        out[k].outliers++;
        out[k].outlier_ns += e.max_ns;
      }
    }
    if (p) {
      mean[k] = pns / (double)p;
      np[k] = p;
      left_ns[k] = e.ns - e.first_ns - out[k].outlier_ns;
      ks[n] = k; ms[n] = mean[k]; n++;
    }
  }
  /* lone periodic samples far above what their neighbours lend: once each */
  int lone[CP_GCLS] = {0}, any = 0;
  for (unsigned k = 0; k < CP_GCLS; k++)
    if (np[k] == 1 && lone_outlier(k, mean[k], ks, ms, n)) lone[k] = any = 1;
  if (any) {
    n = 0;
    for (unsigned k = 0; k < CP_GCLS; k++) {
      if (lone[k]) {
        once_ns[k] += mean[k]; once_n[k]++;
        out[k].outliers++;
        out[k].outlier_ns += left_ns[k];   /* the lone sample, exactly */
        mean[k] = -1;
      } else if (mean[k] >= 0) {
        ks[n] = k; ms[n] = mean[k]; n++;
      }
    }
  }
  double cum = 0;
  uint64_t cum_ns = 0;
  for (unsigned k = 0; k < CP_GCLS; k++) {
    const cp_gcls_ent *e = &g->c[k];
    if (e->samples < e->calls) {
      uint64_t rest = e->calls > once_n[k] ? e->calls - once_n[k] : 0;
      est[k] = once_ns[k];
      if (mean[k] >= 0 || n) {
        double m = mean[k] >= 0 ? mean[k] : cp_gcls_borrow(k, ks, ms, n);
        if (mean[k] < 0) out[k].lent = rest;
        est[k] += m * (double)rest;
        out[k].calls = once_n[k] + rest;
      } else {
        out[k].calls = once_n[k];   /* the rest: the collator's pooled mean */
      }
    }
    /* rounded by running sum: the classes add up to the path's rounded total */
    cum += est[k];
    const uint64_t r = round_u64(cum);
    out[k].ns = r > cum_ns ? r - cum_ns : 0;
    cum_ns += out[k].ns;
  }
}

void cp_gpu_estimate(const cp_gcls *g, uint64_t *est_ns, uint64_t *est_calls, uint64_t *outliers,
                     uint64_t *borrowed) {
  cp_gcls_est c[CP_GCLS];
  cp_gpu_estimate_classes(g, c);
  uint64_t ns = 0, calls = 0, out = 0, lent = 0;
  for (unsigned k = 0; k < CP_GCLS; k++) {
    ns += c[k].ns;
    calls += c[k].calls;
    out += c[k].outliers;
    lent += c[k].lent;
  }
  *est_ns = ns;
  *est_calls = calls;
  if (outliers) *outliers = out;
  if (borrowed) *borrowed = lent;
}
