/*
 * test_counted_memo.c — counted events through their short ways
 * (src/counted_memo.h; start_counted.c: cp_start_counted_child; event_stop.c:
 * stop_quiet; event_state.c: state_quiet) give the numbers the full
 * lookup gives, and hand over to the full checks where those matter.
 *
 * Every call is only counted here (COLLPROF_HOST_SAMPLE=0; but a path's
 * first count has calls timed until one times it: in a loop of two kinds
 * of call in turn, two calls).  Loops of
 * NVLink-shaped calls (GroupApi with its two states, CollApi,
 * KernelLaunch, Group, Coll under its CollApi) must give exact calls,
 * states and bytes per path: one size; two sizes and two functions in
 * turn; the same function name at two addresses (one path, two memo
 * entries); more distinct counts than the memo holds (every start a
 * miss); two communicators in turn.  After the loops the memo must hold
 * the loop's events (white box: the short way was taken, not only the
 * long one).  Then the cases the short ways must not take: a counted
 * event's stop and state after its communicator was finalized, and a
 * stop after collprof_shutdown(), each one bad call.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "h1_util.h"
#include "counted_memo.h"
#include "paths.h"
#include "plugin.h"

typedef struct want { const char *path; uint64_t calls, states, bytes; } want;

static void check(const char *what, const want *w, size_t n) {
  collprof_snapshot s;
  if (!ok(collprof_snapshot_take(&s) == 0, "%s: snapshot", what)) return;
  for (size_t i = 0; i < n; i++) {
    const collprof_path_stat *p = h1_find(&s, w[i].path);
    if (!ok(p != NULL, "%s: %s", what, w[i].path)) continue;
    /* a path's first call gets the next call timed (call_modes.h): a few */
    ok(p->calls == w[i].calls && p->states == w[i].states && p->bytes == w[i].bytes &&
           p->untimed_calls + 8 >= p->calls,
       "%s: %s: %llu calls, %llu states, %llu bytes, nearly all counted (want %llu, %llu, %llu)", what, w[i].path,
       (unsigned long long)p->calls, (unsigned long long)p->states, (unsigned long long)p->bytes,
       (unsigned long long)w[i].calls, (unsigned long long)w[i].states, (unsigned long long)w[i].bytes);
  }
  collprof_snapshot_free(&s);
}

/* The calls of a path that were timed (recorded with a time), now. */
static uint64_t timed_calls(const char *path) {
  collprof_snapshot s;
  if (collprof_snapshot_take(&s) != 0) return 0;
  const collprof_path_stat *p = h1_find(&s, path);
  const uint64_t n = p ? p->calls - p->untimed_calls : 0;
  collprof_snapshot_free(&s);
  return n;
}

/* The memo holds (parent path of parent_str, type, func, count). */
static int memo_holds(const char *parent_str, uint32_t type, const char *func, uint64_t count) {
  uint32_t parent = CP_PATH_NONE;
  if (parent_str) {
    for (uint32_t i = 0; i < cp_path_count(); i++)
      if (strcmp(cp_path_str(i), parent_str) == 0) parent = i;
    if (parent == CP_PATH_NONE) return 0;
  }
  const cp_cmemo_key k = {type == ncclProfileCollApi || type == ncclProfileColl ? func : NULL,
                          type == ncclProfileCollApi || type == ncclProfileColl ? "ncclFloat32" : NULL,
                          type == ncclProfileCollApi || type == ncclProfileColl ? count : 0};
  return cp_cmemo_find(cp_tls_thr, parent, type, &k) != NULL;
}

int main(void) {
  setenv("COLLPROF_HOST_SAMPLE", "0", 1);
  setenv("NCCL_PROFILE_EVENT_MASK", "4031", 1);
  setenv("COLLPROF_GPU_SAMPLE", "0", 1);
  setenv("COLLPROF_LAUNCH_SAMPLE", "0", 1);
  h1_env(NULL);
  void *a = h1_init(0xC0DE1, 0), *b = h1_init(0xC0DE2, 0);
  if (!ok(a && b, "two communicators")) return done_testing();
  static const char *AR = "AllReduce", *BC = "Broadcast";

  enum { N = 100 };
  for (int i = 0; i < N; i++) h1_nvlink_call(a, AR, 8);
  const want one[] = {
    {"GroupApi", N, 2 * N, 0},
    {"GroupApi/CollApi:AllReduce", N, 0, 0},
    {"GroupApi/KernelLaunch", N, 0, 0},
    {"Group", N, 0, 0},
    {"GroupApi/CollApi:AllReduce/Coll:AllReduce", N, 0, N * 32},
  };
  check("one size", one, 5);
  ok(memo_holds(NULL, ncclProfileGroupApi, NULL, 0) && memo_holds(NULL, ncclProfileGroup, NULL, 0) &&
         memo_holds("GroupApi", ncclProfileCollApi, AR, 8) && memo_holds("GroupApi", ncclProfileKernelLaunch, NULL, 0) &&
         memo_holds("GroupApi/CollApi:AllReduce", ncclProfileColl, AR, 8),
     "the memo holds the loop's five starts");

  /* two sizes and two functions in turn, each first alone (a path's first
   * count has calls timed until one times it: here the call after it, and
   * every call of the loop is counted) */
  for (int i = 0; i < 2; i++) h1_nvlink_call(a, AR, 1024);
  for (int i = 0; i < 2; i++) h1_nvlink_call(a, BC, 8);
  for (int i = 0; i < N - 2; i++) {
    h1_nvlink_call(a, AR, 1024);
    h1_nvlink_call(a, BC, 8);
  }
  const want two[] = {
    {"GroupApi", 3 * N, 6 * N, 0},
    {"GroupApi/CollApi:AllReduce/Coll:AllReduce", 2 * N, 0, N * 32 + N * 4096},
    {"GroupApi/CollApi:Broadcast/Coll:Broadcast", N, 0, N * 32},
    {"Group", 3 * N, 0, 0},
  };
  check("sizes and functions in turn", two, 4);
  ok(memo_holds("GroupApi/CollApi:AllReduce", ncclProfileColl, AR, 1024), "AllReduce of 1024 kept its entry");
  ok(memo_holds("GroupApi/CollApi:Broadcast", ncclProfileColl, BC, 8), "Broadcast of 8 kept its entry");

  /* "AllReduce" at another address: another memo entry, the same path */
  char *copy = strdup(AR);
  for (int i = 0; i < N; i++) h1_nvlink_call(a, copy, 8);
  const want same[] = {{"GroupApi/CollApi:AllReduce/Coll:AllReduce", 3 * N, 0, 2 * N * 32 + N * 4096}};
  check("the same name at another address", same, 1);
  ok(memo_holds("GroupApi", ncclProfileCollApi, copy, 8), "the copy's address has its own entry");

  /* more distinct counts than the memo has entries: the long way, exact */
  uint64_t bytes = 0;
  for (int r = 0; r < 3; r++)
    for (int c = 1; c <= 4 * (int)CP_CMEMO; c++) {
      h1_nvlink_call(b, "AllGather", (size_t)c);
      bytes += (uint64_t)c * 4;
    }
  const want many[] = {{"GroupApi/CollApi:AllGather/Coll:AllGather", 3 * 4 * CP_CMEMO, 0, bytes}};
  check("more counts than entries", many, 1);

  /* two communicators in turn: the last context changes at every call */
  for (int i = 0; i < N; i++) {
    h1_nvlink_call(a, "Reduce", 8);
    h1_nvlink_call(b, "Reduce", 8);
  }
  const want both[] = {{"GroupApi/CollApi:Reduce/Coll:Reduce", 2 * N, 0, 2 * N * 32},
                       {"GroupApi", 6 * N + 12 * CP_CMEMO, 2 * (6 * N + 12 * CP_CMEMO), 0}};
  check("two communicators in turn", both, 2);
  free(copy);

  /* two kinds of call in turn from their very first call: each path's
   * first count asks for calls to be timed until one times it (call_modes.h,
   * hs_ask); forcing only the next call timed the other kind at every
   * turn, half the calls, while the asking path got no time at all */
  const uint64_t timed0 = timed_calls("GroupApi");
  for (int i = 0; i < N; i++) {
    h1_nvlink_call(a, "ReduceScatter", 8);
    h1_nvlink_call(a, "AlltoAll", 8);
  }
  const uint64_t timed = timed_calls("GroupApi") - timed0;
  ok(timed >= 1 && timed <= 4, "two kinds in turn from the start: %llu of %d calls timed (want 1 to 4)",
     (unsigned long long)timed, 2 * N);
  ok(timed_calls("GroupApi/CollApi:ReduceScatter/Coll:ReduceScatter") >= 1 &&
         timed_calls("GroupApi/CollApi:AlltoAll/Coll:AlltoAll") >= 1,
     "...and each kind has a timed call");
  const want turn[] = {{"GroupApi/CollApi:ReduceScatter/Coll:ReduceScatter", N, 0, N * 32},
                       {"GroupApi/CollApi:AlltoAll/Coll:AlltoAll", N, 0, N * 32}};
  check("two kinds in turn from the start", turn, 2);

  /* a counted event of a finalized communicator: its stop and state are
   * bad calls, as for a recorded one */
  void *c = h1_init(0xC0DE3, 0);
  if (ok(c != NULL, "a third communicator")) {
    void *ga = h1_start(c, ncclProfileGroupApi, NULL, NULL);
    void *ca = h1_start(c, ncclProfileCollApi, ga, AR);
    ok(ga && ca && ((uintptr_t)ca & 0xFF) == 0, "its events are counted (generation 0)");
    ncclProfiler_v5.finalize(c);
    const uint64_t b0 = cp_core_bad_calls();
    ncclProfiler_v5.stopEvent(ca);
    is_u(cp_core_bad_calls() - b0, 1, "a counted CollApi stopped after finalize: one bad call");
    ncclProfiler_v5.recordEventState(ga, ncclProfilerGroupEndApiStart, NULL);
    is_u(cp_core_bad_calls() - b0, 2, "a counted GroupApi's state after finalize: one more");
  }
  /* ...and after collprof_shutdown() */
  void *ga = h1_start(a, ncclProfileGroupApi, NULL, NULL);
  void *ca = h1_start(a, ncclProfileCollApi, ga, AR);
  collprof_shutdown();
  const uint64_t b1 = cp_core_bad_calls();
  ncclProfiler_v5.stopEvent(ca);
  ok(cp_core_bad_calls() > b1, "a counted CollApi stopped after collprof_shutdown(): a bad call");
  return done_testing();
}
