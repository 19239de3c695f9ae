/*
 * test_cost_sample.c — collprof's callbacks timed where NCCL makes them
 * (src/cost_sample.c), driven through the exported ncclProfiler_v5 table.
 *
 *   always   a window as long as the run: every callback of 100 calls (500)
 *            timed, the estimate their time with no error; after
 *            collprof_shutdown the table names the plain callbacks again
 *            and the time covered stops growing
 *   windows  (a child process: the configuration is read once) windows of
 *            0.5 ms about every 2 ms over 150 ms of calls: some callbacks
 *            timed, not all; the estimate and its error as the rule says;
 *            collprof_shutdown stops the window thread at once and leaves
 *            the plain callbacks
 *   scale    cp_cost_scale's edges
 *   set-ups  (oneoff.h) timed whole: nested ones count once, and a timed
 *            callback leaves out the set-up inside it; the estimate adds
 *            them unscaled
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tap.h"
#include "h1_util.h"
#include "cost_sample.h"
#include "oneoff.h"
#include "tls.h"

static uint64_t mono_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The table's members as NCCL reads them at each call (atomically here: a
 * window thread may swap them meanwhile, cost_sample.c). */
#define CB(member) __atomic_load_n(&ncclProfiler_v5.member, __ATOMIC_ACQUIRE)
typedef ncclResult_t (*start_fn)(void *, void **, ncclProfilerEventDescr_v5_t *);

/* One API call: GroupApi, CollApi (start, stop), a state, GroupApi stop:
 * 5 callbacks. */
static void one_call(void *ctx) {
  ncclProfilerEventDescr_v5_t g, c;
  memset(&g, 0, sizeof g);
  memset(&c, 0, sizeof c);
  g.type = ncclProfileGroupApi;
  g.groupApi.groupDepth = 1;
  void *hg = NULL, *hc = NULL;
  CB(startEvent)(ctx, &hg, &g);
  c.type = ncclProfileCollApi;
  c.parentObj = hg;
  c.collApi.func = "AllReduce";
  c.collApi.datatype = "ncclFloat32";
  c.collApi.count = 8;
  CB(startEvent)(ctx, &hc, &c);
  CB(stopEvent)(hc);
  CB(recordEventState)(hg, ncclProfilerGroupStartApiStop, NULL);
  CB(stopEvent)(hg);
}

static void scale_edges(void) {
  is_u(cp_cost_scale(100, 1000, 0), 0, "scale: no window, no estimate");
  is_u(cp_cost_scale(100, 1000, 1000), 100, "scale: a window over the whole span is the time timed");
  is_u(cp_cost_scale(100, 1000, 2000), 100, "scale: ...and no less when the window outlasts the span");
  is_u(cp_cost_scale(100, 1000, 10), 10000, "scale: 1%% of the time timed: x 100");
  is_u(cp_cost_scale(UINT64_MAX / 2, 1000, 1), UINT64_MAX, "scale: too large saturates");
}

/* The windows child: 0 when every check held, else the bit of the first
 * that failed (printed on stderr). */
static int windows_child(void) {
  setenv("COLLPROF_COST_SAMPLE_MS", "2", 1);
  setenv("COLLPROF_COST_WINDOW_US", "500", 1);
  h1_env(NULL);
  start_fn plain = CB(startEvent);
  void *ctx = h1_init(0xC057, 0);
  uint64_t calls = 0;
  const uint64_t t0 = mono_ns();
  while (mono_ns() - t0 < 150000000ull) { one_call(ctx); calls++; }
  const uint64_t s0 = mono_ns();
  collprof_shutdown();
  const uint64_t shut_ns = mono_ns() - s0;
  collprof_snapshot s;
  if (collprof_snapshot_take(&s) != 0) return 1;
  int fail = 0;
#define CHECK(bit, cond, ...) do { if (!(cond)) { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); fail |= (bit); } } while (0)
  CHECK(2, s.cost_windows >= 5, "windows: %llu windows in 150 ms", (unsigned long long)s.cost_windows);
  CHECK(4, s.cost_callbacks > 0 && s.cost_callbacks < 5 * calls, "windows: %llu of %llu callbacks timed",
        (unsigned long long)s.cost_callbacks, (unsigned long long)(5 * calls));
  const uint64_t want = cp_cost_scale(s.cost_timed_ns, s.cost_span_ns - s.cost_slow_ns,
                                      s.cost_window_ns - s.cost_slow_ns) + s.cost_setup_ns;
  CHECK(8, s.cost_est_ns == want && s.cost_est_ns > s.cost_timed_ns, "windows: estimate %llu, the rule %llu",
        (unsigned long long)s.cost_est_ns, (unsigned long long)want);
  CHECK(16, s.cost_err_ns >= 0, "windows: error %lld (unknown)", (long long)s.cost_err_ns);
  CHECK(32, shut_ns < 100000000ull, "windows: collprof_shutdown took %llu ns", (unsigned long long)shut_ns);
  CHECK(64, CB(startEvent) == plain, "windows: the plain callbacks after shutdown");
  collprof_snapshot_free(&s);
  return fail;
}

int main(void) {
  scale_edges();
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) _exit(windows_child());
  int st = 0;
  waitpid(pid, &st, 0);
  ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "windows: timed in windows, estimated by the rule, stopped at once (status %d)",
     WIFEXITED(st) ? WEXITSTATUS(st) : -1);

  setenv("COLLPROF_COST_SAMPLE_MS", "1", 1);
  setenv("COLLPROF_COST_WINDOW_US", "1000", 1);
  h1_env(NULL);
  start_fn plain = CB(startEvent);
  void *ctx = h1_init(0xC058, 0);
  ok(CB(startEvent) != plain, "always: the table names the timing wrapper from init on");
  for (int i = 0; i < 100; i++) one_call(ctx);
  collprof_shutdown();
  ok(CB(startEvent) == plain, "always: the plain callback again after collprof_shutdown");
  collprof_snapshot a, b;
  if (collprof_snapshot_take(&a) != 0) { ok(0, "snapshot"); return done_testing(); }
  is_u(a.cost_callbacks, 500, "always: every callback of 100 calls timed");
  ok(a.cost_windows == 1 && a.cost_est_ns == a.cost_timed_ns + a.cost_setup_ns && a.cost_timed_ns > 0 &&
     a.cost_setup_ns > 0 && a.cost_err_ns == 0,
     "always: one window, the estimate is the time timed (%llu ns) and the set-ups (%llu ns), no error (%lld)",
     (unsigned long long)a.cost_timed_ns, (unsigned long long)a.cost_setup_ns, (long long)a.cost_err_ns);
  /* set-ups (oneoff.h): nested, counted once; inside a timed callback, left
   * out of its time and added whole */
  const uint64_t tot0 = atomic_load(&cp_oneoff_total_ns), mine0 = cp_oneoff_mine();
  const uint64_t o1 = cp_oneoff_begin(), o2 = cp_oneoff_begin();
  usleep(2000);
  cp_oneoff_end(o2);
  cp_oneoff_end(o1);
  const uint64_t dt = atomic_load(&cp_oneoff_total_ns) - tot0;
  ok(o2 == 0 && dt >= 2000000 && dt < 200000000 && cp_oneoff_mine() - mine0 == dt,
     "set-ups: a nested one counts once (%llu ns for a 2 ms sleep, this thread's sum alike)", (unsigned long long)dt);
  cp_thr *t = cp_thr_get();
  const uint64_t n0 = t->cost_n, ns0 = t->cost_ns, tot1 = atomic_load(&cp_oneoff_total_ns);
  const uint64_t w0 = cp_oneoff_mine(), c0 = cp_cost_begin();
  const uint64_t o3 = cp_oneoff_begin();
  usleep(3000);
  cp_oneoff_end(o3);
  cp_cost_end(c0, w0);
  ok(t->cost_n == n0 + 1 && t->cost_ns - ns0 < 1000000 && atomic_load(&cp_oneoff_total_ns) - tot1 >= 3000000,
     "set-ups: a timed callback leaves out the 3 ms set-up inside it (%llu ns timed, %llu ns set-up)",
     (unsigned long long)(t->cost_ns - ns0), (unsigned long long)(atomic_load(&cp_oneoff_total_ns) - tot1));
  usleep(20000);
  if (collprof_snapshot_take(&b) != 0) { ok(0, "snapshot"); return done_testing(); }
  ok(b.cost_span_ns == a.cost_span_ns && b.cost_window_ns == a.cost_window_ns,
     "always: the time covered ends at shutdown (%llu ns, then %llu)", (unsigned long long)a.cost_span_ns,
     (unsigned long long)b.cost_span_ns);
  collprof_snapshot_free(&a);
  collprof_snapshot_free(&b);
  return done_testing();
}
