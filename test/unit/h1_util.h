/*
 * h1_util.h — helpers for the recording-core unit tests: drive the plugin
 * through its exported ncclProfiler_v5 table exactly as NCCL does, and find
 * paths in a snapshot by their string.
 */
#ifndef COLLPROF_TEST_H1_UTIL_H
#define COLLPROF_TEST_H1_UTIL_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "nccl_profiler_abi.h"
#include "collprof.h"

extern ncclProfiler_v5_t ncclProfiler_v5;
extern ncclProfiler_v4_t ncclProfiler_v4;

/* Quiet, trace-free, files in a private folder (before the first call). */
static inline void h1_env(const char *pool_size) {
  char dir[] = "/tmp/collprof-h1-XXXXXX";
  const char *d = getenv("COLLPROF_OUTPUT_DIR");
  if (!d) { d = mkdtemp(dir); if (d) setenv("COLLPROF_OUTPUT_DIR", d, 1); }
  setenv("COLLPROF_TRACE", "0", 0);
  setenv("COLLPROF_QUIET", "1", 0);
  setenv("NCCL_PROFILE_EVENT_MASK", "4095", 0);
  /* h1's calls are 32 bytes: one GPU sampling rate for all of them, as the
   * tests written against one in N expect (test_mask_control tests the
   * small calls' rate) */
  setenv("COLLPROF_GPU_SAMPLE_SMALL", "1", 0);
  /* h1's callers start every event of a call whatever the mask asks for
   * (they do not play NCCL's emission rules), so no call may be lean: a
   * lean call's Coll is counted from its CollApi, and one started anyway
   * would not be counted again (test/lean.t replays lean calls as NCCL
   * sends them) */
  setenv("COLLPROF_LEAN", "0", 0);
  /* what test/tap.sh exports for every test, so that a binary run by hand
   * behaves as under make check (every call timed, one GPU sample in N
   * exactly, no start delay, no cost windows) */
  setenv("COLLPROF_HOST_SAMPLE", "1", 0);
  setenv("COLLPROF_GPU_SAMPLE_US", "0", 0);
  setenv("COLLPROF_GPU_SAMPLE_DELAY_MS", "0", 0);
  setenv("COLLPROF_COST_SAMPLE_MS", "0", 0);
  if (pool_size) setenv("COLLPROF_POOL_SIZE", pool_size, 1);
}

static int h1_mask;
static inline void *h1_init(uint64_t comm_id, int rank) {
  void *ctx = NULL;
  ncclProfiler_v5.init(&ctx, comm_id, &h1_mask, "h1", 1, 2, rank, NULL);
  return ctx;
}

/* An event of type under parent; a CollApi/P2pApi/Coll/P2p named func
 * moves count elements (h1_start: 8). */
static inline void *h1_start_n(void *ctx, uint64_t type, void *parent, const char *func, size_t count) {
  ncclProfilerEventDescr_v5_t d;
  memset(&d, 0, sizeof d);
  d.type = type;
  d.parentObj = parent;
  switch (type) {
  case ncclProfileCollApi: d.collApi.func = func; d.collApi.count = count; d.collApi.datatype = "ncclFloat32"; break;
  case ncclProfileP2pApi: d.p2pApi.func = func; d.p2pApi.count = count; d.p2pApi.datatype = "ncclInt8"; break;
  case ncclProfileColl: d.coll.func = func; d.coll.count = count; d.coll.datatype = "ncclFloat32";
    d.coll.algo = "RING"; d.coll.proto = "LL"; d.coll.nChannels = 1; break;
  case ncclProfileP2p: d.p2p.func = func; d.p2p.count = count; d.p2p.datatype = "ncclInt8"; break;
  case ncclProfileProxyOp: d.proxyOp.pid = getpid(); d.proxyOp.isSend = func && strcmp(func, "Send") == 0; break;
  default: break;
  }
  void *h = NULL;
  ncclProfiler_v5.startEvent(ctx, &h, &d);
  return h;
}

static inline void *h1_start(void *ctx, uint64_t type, void *parent, const char *func) {
  return h1_start_n(ctx, type, parent, func, 8);
}

/* One all-reduce-shaped call of count floats named func, as NCCL 2.28
 * sends it over NVLink on the application thread (KernelCh and ProxyCtrl
 * aside): GroupApi with its two states, CollApi, KernelLaunch, Group,
 * Coll under its CollApi. */
/* A stop as NCCL makes it: none for an event the plugin gave no handle
 * (a counted call's KernelLaunch and Group: start_common.h, counted_drop_handle). */
static inline void h1_stop(void *h) {
  if (h) ncclProfiler_v5.stopEvent(h);
}
static inline void h1_nvlink_call(void *ctx, const char *func, size_t count) {
  void *ga = h1_start_n(ctx, ncclProfileGroupApi, NULL, NULL, 0);
  ncclProfiler_v5.recordEventState(ga, ncclProfilerGroupStartApiStop, NULL);
  void *ca = h1_start_n(ctx, ncclProfileCollApi, ga, func, count);
  ncclProfiler_v5.stopEvent(ca);
  ncclProfiler_v5.recordEventState(ga, ncclProfilerGroupEndApiStart, NULL);
  h1_stop(h1_start_n(ctx, ncclProfileKernelLaunch, ga, NULL, 0));
  void *gr = h1_start_n(ctx, ncclProfileGroup, NULL, NULL, 0);
  ncclProfiler_v5.stopEvent(h1_start_n(ctx, ncclProfileColl, ca, func, count));
  h1_stop(gr);
  ncclProfiler_v5.stopEvent(ga);
}

/* A Coll of nch channels (func, 8 x ncclFloat32, RING/LL). */
static inline void *h1_start_coll(void *ctx, void *parent, const char *func, int nch) {
  ncclProfilerEventDescr_v5_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileColl;
  d.parentObj = parent;
  d.coll.func = func;
  d.coll.count = 8;
  d.coll.datatype = "ncclFloat32";
  d.coll.algo = "RING";
  d.coll.proto = "LL";
  d.coll.nChannels = (uint8_t)nch;
  void *h = NULL;
  ncclProfiler_v5.startEvent(ctx, &h, &d);
  return h;
}

/* Lines of a file that contain needle; -1 if it cannot be read. */
static inline int h1_file_lines(const char *file, const char *needle) {
  FILE *f = fopen(file, "r");
  if (!f) return -1;
  char line[600];
  int n = 0;
  while (fgets(line, sizeof line, f))
    if (strstr(line, needle)) n++;
  fclose(f);
  return n;
}

static inline void *h1_start_kch(void *ctx, void *parent, uint64_t ptimer) {
  ncclProfilerEventDescr_v5_t d;
  memset(&d, 0, sizeof d);
  d.type = ncclProfileKernelCh;
  d.parentObj = parent;
  d.kernelCh.pTimer = ptimer;
  void *h = NULL;
  ncclProfiler_v5.startEvent(ctx, &h, &d);
  return h;
}

static inline void h1_kch_stop(void *h, uint64_t ptimer) {
  ncclProfilerEventStateArgs_v5_t a;
  a.pTimer = ptimer;
  ncclProfiler_v5.recordEventState(h, ncclProfilerKernelChStop, &a);
  ncclProfiler_v5.stopEvent(h);
}

static inline const collprof_path_stat *h1_find(const collprof_snapshot *s, const char *path) {
  for (size_t i = 0; i < s->npaths; i++)
    if (strcmp(s->paths[i].path, path) == 0) return &s->paths[i];
  return NULL;
}

static inline uint64_t h1_bad_calls(void) {
  collprof_snapshot s;
  if (collprof_snapshot_take(&s) != 0) return UINT64_MAX;
  uint64_t b = s.bad_calls;
  collprof_snapshot_free(&s);
  return b;
}
#endif
