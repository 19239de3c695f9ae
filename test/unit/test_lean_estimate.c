/*
 * test_lean_estimate.c — TAP unit test of src/lean_estimate.c: the proxy
 * events lean calls hid, estimated per size class of their call.  The
 * wanted numbers are worked out here from the rule in lean_estimate.h
 * (seen events as they are; per class, events per call seen times the
 * lean calls; a class with none seen borrowing geometrically between the
 * nearest classes seen, flat beyond them).
 */
#include "lean_estimate.h"
#include "tap.h"
#include <math.h>
#include <string.h>

/* class k of the anchor: seen calls seen (their proxy events carry the
 * class), lean lean calls; ev: the proxy path's events of the calls seen */
static void cls(cp_gcls *a, cp_gcls *p, unsigned k, uint64_t seen, uint64_t lean, uint64_t ev) {
  a->c[k].seen = seen;
  a->c[k].lean = lean;
  a->c[k].calls = seen + lean;
  p->c[k].calls = ev;
}

int main(void) {
  cp_gcls a, p;
  uint64_t e = 0;
  int r;

  /* a loop of two sizes, 4 and 16 steps a call, each seen 1 call in 8 */
  memset(&a, 0, sizeof a); memset(&p, 0, sizeof p);
  cls(&a, &p, 4, 25, 175, 100);
  cls(&a, &p, 21, 25, 175, 400);
  r = cp_lean_estimate(&a, &p, 500, &e);
  ok(r && e == 500 + 175 * 4 + 175 * 16,
     "two sizes: each class's rate for its own lean calls (%" PRIu64 ")", e);
  /* the single ratio would say (500 / 50) x 400 = 4000 here too; it is off
   * when one size is seen more often than the other */
  memset(&a, 0, sizeof a); memset(&p, 0, sizeof p);
  cls(&a, &p, 4, 10, 190, 40);
  cls(&a, &p, 21, 40, 160, 640);
  r = cp_lean_estimate(&a, &p, 680, &e);
  ok(r && e == 4000,
     "large calls seen 4x as often: still 4000 (the single ratio: %u)", (unsigned)(680 * 400 / 50));

  /* events of counted calls (seen, exact) add as they are, in no rate */
  memset(&a, 0, sizeof a); memset(&p, 0, sizeof p);
  cls(&a, &p, 10, 5, 20, 10);
  r = cp_lean_estimate(&a, &p, 10 + 7, &e);
  ok(r && e == 17 + 20 * 2, "counted calls' events kept, not scaled");

  /* borrowing: geometric between the nearest classes seen */
  memset(&a, 0, sizeof a); memset(&p, 0, sizeof p);
  cls(&a, &p, 4, 1, 0, 2);      /* rate 2 */
  cls(&a, &p, 8, 0, 10, 0);     /* halfway: sqrt(2 x 8) = 4 */
  cls(&a, &p, 12, 1, 0, 8);     /* rate 8 */
  r = cp_lean_estimate(&a, &p, 10, &e);
  ok(r && e == 10 + 40, "a class none seen: geometric between neighbours (%" PRIu64 ")", e);
  memset(&a, 0, sizeof a); memset(&p, 0, sizeof p);
  cls(&a, &p, 4, 1, 0, 2);
  cls(&a, &p, 2, 0, 3, 0);      /* below the smallest: its rate */
  cls(&a, &p, 30, 0, 5, 0);     /* above the largest: the same */
  r = cp_lean_estimate(&a, &p, 2, &e);
  ok(r && e == 2 + 3 * 2 + 5 * 2, "beyond the classes seen: flat");
  memset(&a, 0, sizeof a); memset(&p, 0, sizeof p);
  cls(&a, &p, 4, 2, 0, 0);      /* rate 0: a size that brings no proxy event */
  cls(&a, &p, 6, 0, 4, 0);
  cls(&a, &p, 8, 1, 0, 6);
  r = cp_lean_estimate(&a, &p, 6, &e);
  ok(r && e == 6 + 4 * 3, "next to a rate of 0: linear (%" PRIu64 ")", e);

  /* class 0 (no bytes) is a class like the others */
  memset(&a, 0, sizeof a); memset(&p, 0, sizeof p);
  cls(&a, &p, 0, 2, 6, 4);
  r = cp_lean_estimate(&a, &p, 4, &e);
  ok(r && e == 4 + 12, "class 0");

  /* no estimate: no lean call; none seen */
  memset(&a, 0, sizeof a); memset(&p, 0, sizeof p);
  cls(&a, &p, 5, 3, 0, 9);
  e = 77;
  r = cp_lean_estimate(&a, &p, 9, &e);
  ok(!r && e == 77, "no lean call: no estimate, *est untouched");
  memset(&a, 0, sizeof a); memset(&p, 0, sizeof p);
  cls(&a, &p, 5, 0, 30, 0);
  r = cp_lean_estimate(&a, &p, 9, &e);
  ok(!r, "no call seen: no estimate (the snapshot's single ratio then)");

  /* cp_gcls_borrow itself, as the GPU estimate uses it */
  {
    const unsigned ks[] = {3, 7};
    const double vs[] = {1.0, 16.0};
    ok(fabs(cp_gcls_borrow(5, ks, vs, 2) - 4.0) < 1e-9 && cp_gcls_borrow(1, ks, vs, 2) == 1.0 &&
       cp_gcls_borrow(9, ks, vs, 2) == 16.0, "cp_gcls_borrow: geometric between, flat beyond");
  }
  return done_testing();
}
