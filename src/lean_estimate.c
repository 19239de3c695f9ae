/*
 * lean_estimate.c — per-size-class estimate of the proxy events lean calls
 * hid (lean_estimate.h).  Runs at snapshot time only, on merged tables.
 */
#pragma GCC visibility push(hidden)
#include "lean_estimate.h"

int cp_lean_estimate(const cp_gcls *a, const cp_gcls *ev, uint64_t ev_calls, uint64_t *est) {
  unsigned ks[CP_GCLS], n = 0;
  double rs[CP_GCLS];   /* events per call seen, by class */
  uint64_t lean = 0;
  for (unsigned k = 0; k < CP_GCLS; k++) {
    lean += a->c[k].lean;
    if (a->c[k].seen) {
      ks[n] = k;
      rs[n++] = (double)ev->c[k].calls / (double)a->c[k].seen;
    }
  }
  if (!lean || !n) return 0;
  double hidden = 0;
  for (unsigned k = 0; k < CP_GCLS; k++) {
    if (!a->c[k].lean) continue;
    const double r = a->c[k].seen ? (double)ev->c[k].calls / (double)a->c[k].seen : cp_gcls_borrow(k, ks, rs, n);
    hidden += (double)a->c[k].lean * r;
  }
  const double sum = (double)ev_calls + hidden;
  *est = sum >= 1.8e19 ? UINT64_MAX : (uint64_t)(sum + 0.5);
  return 1;
}
