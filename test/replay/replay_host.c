/*
 * replay_host.c — the NCCL side of the plugin interface: loading, calling,
 * unloading, and the process-wide activation mask.
 *
 * Loading follows NCCL 2.28 (ABI doc): the name (--plugin, else
 * NCCL_PROFILER_PLUGIN) is tried as given with dlopen(RTLD_NOW|RTLD_LOCAL),
 * then as libnccl-profiler-<name>.so; "none" means no plugin; unset means
 * libnccl-profiler.so.  Only for the unset case the replay tool adds one
 * fallback NCCL does not have: the libcollprof.so built next to this binary
 * (../lib/ relative to /proc/self/exe), so a fresh build replays through
 * collprof without any setup.  Symbols newest first: ncclProfiler_v5, then
 * ncclProfiler_v4.  Like NCCL, the library is loaded at the first init and
 * dlclosed after the last finalize (and loaded again by a later init).
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "replay.h"

typedef struct rp_loaded {
  void *dl;
  int api;                 /* 5 or 4 */
  ncclProfiler_v5_t *v5;
  ncclProfiler_v4_t *v4;
} rp_loaded;

static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *host_lib;     /* --plugin */
static int host_force_api;
static rp_loaded host_cur;       /* guarded by host_lock; published via host_live */
static rp_loaded *host_live;     /* atomic pointer: &host_cur while loaded */
static int host_tried;           /* a load was attempted (not retried if it failed) */
static long host_comms;          /* inits minus finis (those that count) */
static int host_mask;            /* the process-wide activation mask */
static uint64_t host_ncalls, host_nstarted, host_ndropped, host_nskipped, host_ninit, host_nfini;

void rp_log(const char *fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "collprof-replay: %s\n", buf);
}

int *rp_host_mask_ptr(void) { return &host_mask; }

void rp_host_configure(const char *lib, int force_api) {
  host_lib = lib;
  host_force_api = force_api;
}

/* NCCL's logger stand-in: prints only what NCCL_DEBUG would let through. */
static void host_logger(int level, unsigned long flags, const char *file,
                        int line, const char *fmt, ...) {
  (void)flags; (void)file; (void)line;
  static int threshold = -1;
  int th = __atomic_load_n(&threshold, __ATOMIC_RELAXED);
  if (th < 0) {
    const char *d = getenv("NCCL_DEBUG");
    th = !d ? 0 : !strcasecmp(d, "WARN") ? 2 : !strcasecmp(d, "INFO") ? 3
         : !strcasecmp(d, "TRACE") ? 5 : 1;
    __atomic_store_n(&threshold, th, __ATOMIC_RELAXED);
  }
  if (level > th || !fmt) return;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  fprintf(stderr, "NCCL %s %s\n", level <= 2 ? "WARN" : "INFO", buf);
}

static void *host_dlopen(const char *name, int quiet) {
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    if (!quiet) rp_log("dlopen %s: %s", name, e ? e : "?");
  }
  return h;
}

static void *host_open_library(void) {
  const char *name = host_lib ? host_lib : getenv("NCCL_PROFILER_PLUGIN");
  char buf[PATH_MAX + 64];
  void *h = NULL;
  if (name && !strcmp(name, "none")) return NULL;
  if (name && *name) {
    if ((h = host_dlopen(name, 1))) return h;
    snprintf(buf, sizeof buf, "libnccl-profiler-%s.so", name);
    if ((h = host_dlopen(buf, 1))) return h;
    host_dlopen(name, 0);   /* both failed: say why */
    return host_dlopen(buf, 0);
  }
  if ((h = dlopen("libnccl-profiler.so", RTLD_NOW | RTLD_LOCAL))) return h;
  ssize_t n = readlink("/proc/self/exe", buf, PATH_MAX);
  if (n <= 0) return NULL;
  buf[n] = 0;
  char *slash = strrchr(buf, '/');
  if (!slash) return NULL;
  strcpy(slash, "/../lib/libcollprof.so");
  return host_dlopen(buf, 0);
}

/* Caller holds host_lock. */
static void host_load_locked(void) {
  if (host_live || host_tried) return;
  host_tried = 1;
  void *dl = host_open_library();
  if (!dl) { rp_log("no profiler plugin loaded; replaying without one"); return; }
  rp_loaded l = { .dl = dl };
  if (host_force_api != 4) l.v5 = dlsym(dl, "ncclProfiler_v5");
  if (!l.v5 && host_force_api != 5) l.v4 = dlsym(dl, "ncclProfiler_v4");
  l.api = l.v5 ? 5 : l.v4 ? 4 : 0;
  if (!l.api) {
    rp_log("plugin has no ncclProfiler_v%s symbol", host_force_api == 4 ? "4" : host_force_api == 5 ? "5" : "5/v4");
    dlclose(dl);
    return;
  }
  host_cur = l;
  __atomic_store_n(&host_live, &host_cur, __ATOMIC_RELEASE);
}

static inline rp_loaded *host_get(void) {
  return __atomic_load_n(&host_live, __ATOMIC_ACQUIRE);
}

int rp_host_api(void) {
  rp_loaded *l = host_get();
  return l ? l->api : 0;
}

int rp_host_probe_api(void) {
  pthread_mutex_lock(&host_lock);
  host_load_locked();
  int api = host_live ? host_cur.api : (host_force_api ? host_force_api : 5);
  pthread_mutex_unlock(&host_lock);
  return api;
}

static inline void host_count(uint64_t *c) { __atomic_fetch_add(c, 1, __ATOMIC_RELAXED); }

ncclResult_t rp_host_init(void **ctx, uint64_t comm_id, const char *name,
                          int nnodes, int nranks, int rank) {
  pthread_mutex_lock(&host_lock);
  host_load_locked();
  rp_loaded *l = host_live;
  if (l) host_comms++;
  pthread_mutex_unlock(&host_lock);
  *ctx = NULL;
  if (!l) return NCCL_OK;
  host_count(&host_ncalls);
  host_count(&host_ninit);
  if (l->api == 5)
    return l->v5->init(ctx, comm_id, &host_mask, name, nnodes, nranks, rank, host_logger);
  return l->v4->init(ctx, &host_mask, name, comm_id, nnodes, nranks, rank, host_logger);
}

static void host_to_v4(const ncclProfilerEventDescr_v5_t *s, ncclProfilerEventDescr_v4_t *d) {
  memset(d, 0, sizeof *d);
  d->type = (uint8_t)s->type;
  d->parentObj = s->parentObj;
  d->rank = s->rank;
  switch (s->type) {
  case ncclProfileColl:
    d->coll.seqNumber = s->coll.seqNumber; d->coll.func = s->coll.func;
    d->coll.sendBuff = s->coll.sendBuff; d->coll.recvBuff = s->coll.recvBuff;
    d->coll.count = s->coll.count; d->coll.root = s->coll.root;
    d->coll.datatype = s->coll.datatype; d->coll.nChannels = s->coll.nChannels;
    d->coll.nWarps = s->coll.nWarps; d->coll.algo = s->coll.algo; d->coll.proto = s->coll.proto;
    break;
  case ncclProfileP2p:
    d->p2p.func = s->p2p.func; d->p2p.buff = s->p2p.buff; d->p2p.datatype = s->p2p.datatype;
    d->p2p.count = s->p2p.count; d->p2p.peer = s->p2p.peer; d->p2p.nChannels = s->p2p.nChannels;
    break;
  case ncclProfileProxyOp:
    d->proxyOp.pid = s->proxyOp.pid; d->proxyOp.channelId = s->proxyOp.channelId;
    d->proxyOp.peer = s->proxyOp.peer; d->proxyOp.nSteps = s->proxyOp.nSteps;
    d->proxyOp.chunkSize = s->proxyOp.chunkSize; d->proxyOp.isSend = s->proxyOp.isSend;
    break;
  case ncclProfileProxyStep: d->proxyStep.step = s->proxyStep.step; break;
  case ncclProfileKernelCh:
    d->kernelCh.channelId = s->kernelCh.channelId; d->kernelCh.pTimer = s->kernelCh.pTimer;
    break;
  case ncclProfileNetPlugin: d->netPlugin.id = s->netPlugin.id; d->netPlugin.data = s->netPlugin.data; break;
  default: break;
  }
}

/* A callback as NCCL finds it: read from the plugin's struct at every call
 * (the plugin may swap its members while running: src/cost_sample.c); an
 * atomic load where NCCL's is a plain one, so ThreadSanitizer sees the
 * hand-over. */
#define CALLBACK(plugin, member) __atomic_load_n(&(plugin)->member, __ATOMIC_ACQUIRE)

ncclResult_t rp_host_start(void *ctx, void **handle, ncclProfilerEventDescr_v5_t *d) {
  rp_loaded *l = host_get();
  if (handle) *handle = NULL;
  if (!l) { host_count(&host_nskipped); return NCCL_OK; }
  host_count(&host_ncalls);
  host_count(&host_nstarted);
  if (l->api == 5) return CALLBACK(l->v5, startEvent)(ctx, handle, d);
  if (!d) return CALLBACK(l->v4, startEvent)(ctx, handle, NULL);
  ncclProfilerEventDescr_v4_t d4;
  host_to_v4(d, &d4);
  return CALLBACK(l->v4, startEvent)(ctx, handle, &d4);
}

ncclResult_t rp_host_stop(void *handle) {
  rp_loaded *l = host_get();
  if (!l) { host_count(&host_nskipped); return NCCL_OK; }
  host_count(&host_ncalls);
  return l->api == 5 ? CALLBACK(l->v5, stopEvent)(handle) : CALLBACK(l->v4, stopEvent)(handle);
}

ncclResult_t rp_host_state(void *handle, int state, ncclProfilerEventStateArgs_v5_t *args) {
  rp_loaded *l = host_get();
  if (!l) { host_count(&host_nskipped); return NCCL_OK; }
  host_count(&host_ncalls);
  if (l->api == 5)
    return CALLBACK(l->v5, recordEventState)(handle, (ncclProfilerEventState_v5_t)state, args);
  return CALLBACK(l->v4, recordEventState)(handle, (ncclProfilerEventState_v4_t)state,
                                 (ncclProfilerEventStateArgs_v4_t *)args);
}

ncclResult_t rp_host_fini(void *ctx, int counts_for_unload) {
  rp_loaded *l = host_get();
  if (!l) { host_count(&host_nskipped); return NCCL_OK; }
  host_count(&host_ncalls);
  host_count(&host_nfini);
  ncclResult_t r = l->api == 5 ? l->v5->finalize(ctx) : l->v4->finalize(ctx);
  if (!counts_for_unload) return r;
  pthread_mutex_lock(&host_lock);
  if (--host_comms <= 0 && host_live) {
    /* NCCL unloads the plugin after the last communicator is finalized. */
    __atomic_store_n(&host_live, NULL, __ATOMIC_RELEASE);
    dlclose(host_cur.dl);
    memset(&host_cur, 0, sizeof host_cur);
    host_comms = 0;
    host_tried = 0;   /* a later init loads it again, as NCCL does */
  }
  pthread_mutex_unlock(&host_lock);
  return r;
}

void *rp_host_sym(const char *name) {
  rp_loaded *l = host_get();
  return l ? dlsym(l->dl, name) : NULL;
}

uint64_t rp_host_callbacks(void) { return __atomic_load_n(&host_ncalls, __ATOMIC_RELAXED); }
uint64_t rp_host_event_callbacks(void) {
  return rp_host_callbacks() - __atomic_load_n(&host_ninit, __ATOMIC_RELAXED) -
         __atomic_load_n(&host_nfini, __ATOMIC_RELAXED);
}
uint64_t rp_host_inits(void) { return __atomic_load_n(&host_ninit, __ATOMIC_RELAXED); }
uint64_t rp_host_finis(void) { return __atomic_load_n(&host_nfini, __ATOMIC_RELAXED); }
uint64_t rp_host_events_started(void) { return __atomic_load_n(&host_nstarted, __ATOMIC_RELAXED); }
void rp_count_dropped(uint64_t n) { __atomic_fetch_add(&host_ndropped, n, __ATOMIC_RELAXED); }
uint64_t rp_dropped(void) { return __atomic_load_n(&host_ndropped, __ATOMIC_RELAXED); }
static uint64_t host_nstale;
void rp_count_stale_api_stop(void) { __atomic_fetch_add(&host_nstale, 1, __ATOMIC_RELAXED); }
uint64_t rp_stale_api_stops(void) { return __atomic_load_n(&host_nstale, __ATOMIC_RELAXED); }
