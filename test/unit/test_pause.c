/*
 * test_pause.c — collprof_pause()/collprof_resume() through the plugin
 * (include/collprof.h; src/profiling_windows.c "Pause"; src/call_modes.h, the off
 * calls of "Host sampling").
 *
 * The test plays NCCL as the ABI doc describes it: each API call reads the
 * live mask first and sends GroupApi if the mask has anything, its
 * children only if the mask has more than GroupApi.  Calls made while
 * recording is off must leave no count, no path and no trace record, and
 * a call whose mask was read just before the pause (so NCCL sends its
 * whole tree) must be ignored whole, not half.  A CUDA graph captured
 * while paused must still freeze the mask (a capture collprof never saw
 * would hang NCCL 2.28 once KernelCh is switched on again), and the rank
 * record must list the profiled windows.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tap.h"
#include "h1_util.h"

/* NCCL 2.28's thread-local CollApi handle (ncclProfilerApiState): set
 * only when a call's mask asks for the event, stopped at every call. */
static void *nccl_collapi;
static int stale_stops;

/* One API call as NCCL makes it, with the mask m it read. */
static void call_with(void *ctx, int m, int captured) {
  if (m == 0) return;
  ncclProfilerEventDescr_v5_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileGroupApi;
  d.groupApi.graphCaptured = (uint8_t)captured;
  d.groupApi.groupDepth = 1;
  void *ga = NULL;
  ncclProfiler_v5.startEvent(ctx, &ga, &d);
  ncclProfilerEventStateArgs_v5_t a;
  memset(&a, 0, sizeof a);
  ncclProfiler_v5.recordEventState(ga, ncclProfilerGroupStartApiStop, &a);
  if (m & ~ncclProfileGroupApi) {
    void *ca = nccl_collapi = h1_start(ctx, ncclProfileCollApi, ga, "AllReduce");
    ncclProfiler_v5.stopEvent(ca);
    h1_stop(h1_start(ctx, ncclProfileKernelLaunch, ga, NULL));
    void *gr = h1_start(ctx, ncclProfileGroup, NULL, NULL);
    void *co = h1_start(ctx, ncclProfileColl, ca, "AllReduce");
    ncclProfiler_v5.stopEvent(co);
    h1_stop(gr);
  } else if (nccl_collapi) {
    /* no CollApi started, but NCCL stops the one it kept from an earlier
     * call again (src/callback_core.h, api_restop) */
    ncclProfiler_v5.stopEvent(nccl_collapi);
    stale_stops++;
  }
  ncclProfiler_v5.recordEventState(ga, ncclProfilerGroupEndApiStart, &a);
  ncclProfiler_v5.stopEvent(ga);
}
static void call(void *ctx) { call_with(ctx, __atomic_load_n(&h1_mask, __ATOMIC_RELAXED), 0); }

/* What the plugin writes on fd 2 between err_begin and err_end (the
 * caller frees it). */
static int err_saved = -1;
static FILE *err_file;
static void err_begin(void) {
  fflush(stderr);
  err_file = tmpfile();
  err_saved = dup(2);
  if (err_file) dup2(fileno(err_file), 2);
}
static char *err_end(void) {
  fflush(stderr);
  if (err_saved >= 0) { dup2(err_saved, 2); close(err_saved); err_saved = -1; }
  char *buf = calloc(1, 4096);
  if (err_file && buf) {
    rewind(err_file);
    size_t n = fread(buf, 1, 4095, err_file);
    buf[n] = '\0';
  }
  if (err_file) fclose(err_file);
  return buf ? buf : calloc(1, 1);
}

static uint64_t calls_of(const collprof_snapshot *s, const char *path) {
  const collprof_path_stat *p = h1_find(s, path);
  return p ? p->calls : 0;
}

int main(void) {
  setenv("NCCL_PROFILE_EVENT_MASK", "4031", 1);   /* collprof's default mask */
  setenv("COLLPROF_GPU_SAMPLE", "16", 1);
  setenv("COLLPROF_TRACE", "1", 1);
  setenv("COLLPROF_HOST_SAMPLE", "1", 1);
  h1_env(NULL);
  ok(collprof_paused() == 0, "not paused before anything");
  void *ctx = h1_init(0x9A05E, 0);
  if (!ok(ctx != NULL, "a communicator")) return done_testing();

  for (int i = 0; i < 5; i++) call(ctx);
  collprof_snapshot s0;
  if (!ok(collprof_snapshot_take(&s0) == 0, "snapshot after 5 calls")) return done_testing();
  is_u(calls_of(&s0, "GroupApi"), 5, "5 calls recorded");
  is_s(s0.windows, "", "never paused: no windows text (profiled all the time)");

  /* A call whose mask NCCL read before the pause: its whole tree comes,
   * and is ignored whole. */
  const int m_before = __atomic_load_n(&h1_mask, __ATOMIC_RELAXED);
  ok(collprof_pause() == 0 && collprof_paused() == 1, "collprof_pause(): returns 0, paused");
  call_with(ctx, m_before, 0);
  const int m_paused = __atomic_load_n(&h1_mask, __ATOMIC_RELAXED);
  is_u(m_paused, ncclProfileGroupApi, "paused: NCCL is asked for GroupApi alone");
  for (int i = 0; i < 7; i++) call(ctx);
  ok(collprof_pause() == 1, "a second pause returns 1 and changes nothing");

  collprof_snapshot s1;
  if (!ok(collprof_snapshot_take(&s1) == 0, "snapshot while paused")) return done_testing();
  is_u(calls_of(&s1, "GroupApi"), 5, "paused: no GroupApi counted (the 8 calls made while paused)");
  is_u(calls_of(&s1, "GroupApi/CollApi:AllReduce/Coll:AllReduce"), 5,
       "paused: the call with the whole tree left no Coll either");
  is_u(s1.npaths, s0.npaths, "paused: no new path");
  is_u(s1.events_recorded + s1.events_counted, s0.events_recorded + s0.events_counted,
       "paused: no event recorded or counted");
  ok(stale_stops == 7, "paused: NCCL stopped its kept CollApi handle again in each of the 7 calls (%d)", stale_stops);
  is_u(s1.bad_calls, 0, "paused: no bad call, those stops included");

  /* A graph captured while paused still freezes the mask. */
  call_with(ctx, __atomic_load_n(&h1_mask, __ATOMIC_RELAXED), 1);
  collprof_snapshot s2;
  if (!ok(collprof_snapshot_take(&s2) == 0, "snapshot after a capture")) return done_testing();
  ok(strstr(s2.mask_frozen, "CUDA graph capture") != NULL,
     "a graph captured while paused freezes the mask (\"%s\")", s2.mask_frozen);
  is_u(calls_of(&s2, "GroupApi"), 5, "...and is not counted");

  ok(collprof_resume() == 1 && collprof_paused() == 0, "collprof_resume(): returns 1, recording");
  for (int i = 0; i < 4; i++) call(ctx);
  collprof_snapshot s3;
  if (!ok(collprof_snapshot_take(&s3) == 0, "snapshot after resume")) return done_testing();
  is_u(calls_of(&s3, "GroupApi"), 9, "resume: 5 + 4 calls recorded");
  is_u(calls_of(&s3, "GroupApi/CollApi:AllReduce/Coll:AllReduce"), 9, "resume: 9 Coll");
  is_u(s3.npaths, s0.npaths, "the same paths as before the pause");
  double a, b, c;
  ok(sscanf(s3.windows, "%lf-%lf %lf-open", &a, &b, &c) == 3 && a == 0 && b <= c,
     "windows: from the first init to the pause, and from the resume on (\"%s\")", s3.windows);
  is_u(s3.bad_calls, 0, "no bad call");

  /* Paused right after a recorded call: each paused call stops that
   * call's recorded CollApi again (NCCL's kept handle), which is no bad
   * call and says nothing on stderr. */
  ok(collprof_pause() == 0, "paused again after a recorded call");
  const int stale0 = stale_stops;
  err_begin();
  for (int i = 0; i < 3; i++) call(ctx);
  char *err = err_end();
  collprof_snapshot s4;
  if (!ok(collprof_snapshot_take(&s4) == 0, "snapshot")) return done_testing();
  ok(stale_stops - stale0 == 3, "NCCL stopped the recorded call's CollApi again in each of the 3 paused calls");
  is_u(s4.bad_calls, 0, "...which is no bad call");
  is_s(err, "", "...and no warning");
  free(err);
  collprof_snapshot_free(&s4);
  ok(collprof_resume() == 1, "resumed");

  ok(collprof_write_local() == 0, "rank file written");
  char file[4200];
  snprintf(file, sizeof file, "%s/pid%d.jsonl", collprof_output_dir(), (int)getpid());
  ok(h1_file_lines(file, "\"windows\":\"0.000-") == 1, "the rank record lists the windows (%s)", file);
  ok(h1_file_lines(file, "\"recordType\":\"event\"") > 0 &&
         h1_file_lines(file, "\"recordType\":\"event\",\"type\":\"ncclProfileGroupApi\"") == 9,
     "the trace holds the 9 recorded GroupApi events and none of the paused calls");
  collprof_snapshot_free(&s0);
  collprof_snapshot_free(&s1);
  collprof_snapshot_free(&s2);
  collprof_snapshot_free(&s3);
  ncclProfiler_v5.finalize(ctx);
  return done_testing();
}
