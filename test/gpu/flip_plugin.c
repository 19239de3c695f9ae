/*
 * flip_plugin.c — a diagnostic NCCL profiler plugin that records nothing and
 * only toggles KernelCh in NCCL's live activation mask, the way a GPU
 * sampler would.  It is the evidence behind collprof's default of no GPU
 * sampling: with it, NCCL 2.28.9 hangs in ncclCommDestroy in a program that
 * captures CUDA graphs (test/gpu/mask_flip_hang.sh; seen on 2 H200s).
 *
 * FLIP_MODE: 1 toggle at CollApi/P2pApi start (reaches the next call),
 *            2 toggle only at an outermost GroupApi stop with no group open,
 *            3 = 2, and freeze once a graph-captured call is seen.
 * FLIP_N:    KernelCh on for one API call in N (default 16).
 */
#include "nccl_profiler_abi.h"
#include <stdatomic.h>
#include <stdlib.h>
static int *g_mask; static int g_mode = 1, g_n = 16;
static atomic_long g_calls; static atomic_int g_open, g_frozen, g_next = 1;
static int base(void) { return 4095 & ~64; }
static void pub(void) { if (g_mask && !atomic_load(&g_frozen)) __atomic_store_n(g_mask, base() | (atomic_load(&g_next) ? 64 : 0), __ATOMIC_RELAXED); }
static ncclResult_t init(void **c, uint64_t id, int *m, const char *n, int a, int b, int r, ncclDebugLogger_t l) {
  (void)id; (void)n; (void)a; (void)b; (void)r; (void)l;
  const char *e = getenv("FLIP_MODE"); if (e) g_mode = atoi(e);
  e = getenv("FLIP_N"); if (e) g_n = atoi(e);
  *c = (void *)0x1000; g_mask = m; pub(); return 0; }
static ncclResult_t start(void *c, void **h, ncclProfilerEventDescr_v5_t *d) {
  (void)c; *h = (void *)0x2000;
  if (d->type == ncclProfileGroupApi) {
    atomic_fetch_add(&g_open, 1);
    if (g_mode == 3 && d->groupApi.graphCaptured) atomic_store(&g_frozen, 1);
    *h = (void *)0x3000;
  } else if (d->type == ncclProfileCollApi || d->type == ncclProfileP2pApi) {
    long k = atomic_fetch_add(&g_calls, 1);
    atomic_store(&g_next, (k + 1) % g_n == 0);
    if (g_mode == 1) pub();
  }
  return 0; }
static ncclResult_t stop(void *h) {
  if (h == (void *)0x3000 && atomic_fetch_sub(&g_open, 1) == 1 && g_mode >= 2) pub();
  return 0; }
static ncclResult_t state(void *h, ncclProfilerEventState_v5_t s, ncclProfilerEventStateArgs_v5_t *a) { (void)h; (void)s; (void)a; return 0; }
static ncclResult_t fini(void *c) { (void)c; return 0; }
ncclProfiler_v5_t ncclProfiler_v5 = {"flip", init, start, stop, state, fini};
