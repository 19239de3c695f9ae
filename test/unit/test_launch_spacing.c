/*
 * test_launch_spacing.c — the launch timer's spacing rule
 * (src/launch_timer.h, cp_lt_spacing): which kernel launches of a thread
 * get CUDA events, given COLLPROF_LAUNCH_SAMPLE and
 * COLLPROF_LAUNCH_INTERVAL_US.  Launches are simulated at chosen paces
 * and the rule applied as launch_timer.c applies it (a countdown set at
 * each timed launch): steady paces settle where the rule says, a pace
 * change is followed within one spacing, an idle stretch falls back to
 * one in N, and extreme values stay capped without overflow.
 */
#include <stdint.h>
#include <stdio.h>
#include "tap.h"
#include "launch_timer.h"

/* Apply the rule to n launches at times t(k) (ns); returns the number
 * timed and the last spacing. */
typedef uint64_t (*pace_fn)(uint64_t k);
static uint64_t simulate(uint32_t every, uint64_t interval_ns, uint64_t n, pace_fn t, uint32_t *last_step) {
  uint32_t left = 0, step = 0;
  uint64_t last = 0, timed = 0;
  int seen = 0;
  for (uint64_t k = 0; k < n; k++) {
    if (left) {
      left--;
      continue;
    }
    const uint64_t now = t(k);
    step = cp_lt_spacing(every, interval_ns, seen ? step : 0, seen && now > last ? now - last : 1);
    left = step - 1;
    last = now;
    seen = 1;
    timed++;
  }
  if (last_step) *last_step = step;
  return timed;
}

static uint64_t every_1ms(uint64_t k) { return 1000000ull * k; }
static uint64_t every_10us(uint64_t k) { return 10000ull * k; }
/* 10 us calls for 100000 launches (1 s), then 1 ms calls */
static uint64_t fast_then_slow(uint64_t k) {
  return k < 100000 ? 10000ull * k : 1000000000ull + 1000000ull * (k - 100000);
}
/* bursts: 1000 launches 10 us apart, then 1 s idle */
static uint64_t bursts(uint64_t k) { return (k / 1000) * 1000000000ull + (k % 1000) * 10000ull; }
static uint64_t all_at_once(uint64_t k) { (void)k; return 42; }

int main(void) {
  uint32_t st = 0;
  /* No interval: exactly the first and every N-th. */
  is_u(simulate(64, 0, 6400, every_10us, &st), 100, "interval 0, N=64: 100 of 6400 launches timed");
  is_u(st, 64, "interval 0: spacing stays 64");
  is_u(simulate(1, 0, 500, every_10us, &st), 500, "interval 0, N=1: every launch");
  is_u(simulate(0, 0, 10, every_10us, &st), 10, "N=0 never reaches the rule (the fast path returns); taken as 1");

  /* 5 ms interval at 1 ms per launch, N=1: settles at every 5th. */
  is_u(cp_lt_spacing(1, 5000000, 0, 1), 1, "the thread's first launch: no pace known, spacing N");
  simulate(1, 5000000, 1000, every_1ms, &st);
  is_u(st, 5, "1 ms per launch, 5 ms interval: every 5th launch");
  /* 10 us per launch, N=64, 5 ms interval: 500 launches apart. */
  uint64_t n = simulate(64, 5000000, 100000, every_10us, &st);
  is_u(st, 500, "10 us per launch, N=64, 5 ms interval: every 500th launch");
  ok(n >= 100000 / 500 && n <= 100000 / 500 + 3, "  and about one timed launch per 5 ms of launches (%llu in 1 s)",
     (unsigned long long)n);
  /* 1 ms per launch, N=64: the count is already further than 5 ms. */
  simulate(64, 5000000, 10000, every_1ms, &st);
  is_u(st, 64, "1 ms per launch, N=64, 5 ms interval: the count rules, every 64th");

  /* A pace change is followed after one spacing. */
  simulate(16, 5000000, 100000 + 2000, fast_then_slow, &st);
  is_u(st, 16, "10 us then 1 ms per launch (N=16, 5 ms): back to every 16th");
  /* Bursts after idle seconds: the first spacing after an idle second is N. */
  n = simulate(8, 5000000, 10000, bursts, &st);
  ok(n >= 10 && n <= 10 * 4, "bursts of 1000 launches 10 us apart after 1 s idle (N=8, 5 ms): %llu timed in 10 bursts",
     (unsigned long long)n);

  /* Extremes: all launches at one instant, the longest interval, the cap. */
  simulate(1, 5000000, 100, all_at_once, &st);
  is_u(st, CP_LT_MAX_STEP, "launches with no time between them: spacing capped at CP_LT_MAX_STEP");
  is_u(cp_lt_spacing(1, 3600000000000ull, CP_LT_MAX_STEP, 1), CP_LT_MAX_STEP,
       "an hour's interval after the cap, 1 ns taken: capped, no overflow");
  is_u(cp_lt_spacing(1, UINT64_MAX / 2, 4, 1), CP_LT_MAX_STEP, "interval x spacing past 64 bits: capped");
  is_u(cp_lt_spacing(64, 5000000, 500, 0), CP_LT_MAX_STEP, "0 ns taken is read as 1 ns");
  is_u(cp_lt_spacing(64, 5000000, 500, 3600000000000ull), 64, "an hour since the last: back to N");
  return done_testing();
}
