/*
 * plugin.c — the NCCL profiler plugin's face: ncclProfiler_v5 (NCCL 2.28)
 * and ncclProfiler_v4 (2.27) over one implementation, the process-wide
 * set-up at the first init, a communicator's init and finalize, the bad
 * calls' warnings, and the timing wrappers the cost windows switch in
 * (cost_sample.c).
 *
 * The event callbacks are one file each, by concern: event_start.c
 * (startEvent's common path; start_general.c every other case,
 * start_counted.c the starts that only count, start_record.h/.c and
 * start_slot.h a recorded start's trace record and slot, start_common.h
 * what all starts share), event_stop.c (stopEvent), event_state.c
 * (recordEventState); parent_link.c links a child to its parent across
 * threads; call_modes.h is what each API call records (host sampling);
 * callback_core.h what they all share.  How the common paths stay cheap
 * is in each file's opening comment.
 *
 * Finalize releases the communicator's slots (pool.h): later stops and
 * states on its handles are counted as after-finalize bad calls; children
 * elsewhere that name its handles keep their path (handle bits) and skip
 * the parent update.
 *
 * Robustness: every bad call (NULL pointers, foreign or stale handles,
 * double stops, calls after finalize or collprof_shutdown) returns
 * ncclSuccess, prints one "collprof:" line per kind and is counted.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "nccl_profiler_abi.h"
#include "collprof.h"
#pragma GCC visibility push(hidden)
#include "plugin.h"
#include "callback_core.h"
#include "parent_link.h"
#include "affinity.h"
#include "bump.h"
#include "capture.h"
#include "clock.h"
#include "config.h"
#include "cost_sample.h"
#include "cuda_uuid.h"
#include "launch_timer.h"
#include "mask_control.h"
#include "oneoff.h"
#include "output_hooks.h"
#include "paths.h"
#include "pool.h"
#include "pool_owner.h"
#include "proxy_defer.h"
#include "registry.h"
#include "strtab.h"
#include "tls.h"
#include "trace.h"
#include "trace_writer.h"

#define CP_EXPORT __attribute__((visibility("default")))

/* ---- process state (written once at first init, then read-only) ---- */
struct cp_plug cp_plug;   /* callback_core.h */
static pthread_once_t first_once = PTHREAD_ONCE_INIT;

/* ---- one warning per kind (callback_core.h: the kinds) ---- */
static atomic_flag warned[W_NKINDS];

__attribute__((cold, noinline)) void cp_bad_call(int kind, const char *what) {
  atomic_fetch_add_explicit(&cp_plug.bad_calls, 1, memory_order_relaxed);
  if (!atomic_flag_test_and_set(&warned[kind])) cp_warn("%s (further ones counted, not printed)", what);
}

/* A call on an event that already stopped: the first one's line names the
 * event (handle, call path, calling thread), so that the one run in which
 * it happens says where to look. */
__attribute__((cold, noinline)) void cp_bad_event(int kind, const char *what, uint64_t h, uint32_t path,
                                               const cp_thr *t) {
  char line[400];
  const char *ps = path != CP_PATH_NONE ? cp_path_str(path) : "";
  snprintf(line, sizeof line, "%s (handle 0x%llx, path %s, thread %d); ignored", what, (unsigned long long)h,
           *ps ? ps : "?", t ? (int)t->tid : -1);
  cp_bad_call(kind, line);
}

uint64_t cp_core_bad_calls(void) { return atomic_load_explicit(&cp_plug.bad_calls, memory_order_relaxed); }
int cp_core_nccl_version(void) { return atomic_load_explicit(&cp_plug.nccl_version, memory_order_relaxed); }
double cp_core_event_cost(void) { return cp_plug.event_cost; }
void cp_plugin_stop(void) { atomic_store(&cp_hot.stopped, 1); }

cp_pool *cp_core_pool_for(uint32_t idx, uint32_t lane) {
  if (idx == 0) return lane ? NULL : atomic_load_explicit(&cp_plug.detach, memory_order_acquire);
  if (idx == CP_COMM_SCRATCH) return lane ? NULL : atomic_load_explicit(&cp_plug.scratch, memory_order_acquire);
  return cp_registry_lane(idx, lane);
}

void cp_core_set_scratch(cp_pool *p, uint64_t ctx) {
  atomic_store(&cp_plug.scratch, p);
  atomic_store(&cp_plug.scratch_ctx, p ? ctx : 0);
}

/* This thread's lane of communicator c (registry.h): the lane it owns, or
 * the first free one, created now (once per thread and communicator, not
 * per event); with every lane taken, or no memory, or c finalized, one it
 * shares.  Never NULL: lane 0 exists from registration. */
__attribute__((noinline)) cp_pool *cp_lane_of(cp_thr *t, cp_comm *c) {
  const uintptr_t me = (uintptr_t)t;
  for (uint32_t i = 0; i < CP_LANES; i++)
    if (__atomic_load_n(&c->lane_owner[i], __ATOMIC_ACQUIRE) == me) return __atomic_load_n(&c->lanes[i], __ATOMIC_ACQUIRE);
  cp_pool *p = NULL;
  cp_spin_lock(&c->lanes_lock);
  if (!__atomic_load_n(&c->finalized, __ATOMIC_ACQUIRE))
    for (uint32_t i = 0; i < CP_LANES; i++) {
      if (__atomic_load_n(&c->lane_owner[i], __ATOMIC_RELAXED)) continue;
      const cp_config *cfg = cp_config_get();
      /* lanes 0 and 1 were made at registration (registry.c) */
      cp_pool *made = __atomic_load_n(&c->lanes[i], __ATOMIC_ACQUIRE);
      p = made ? made : cp_pool_create_lane(c->index, i, cfg->pool_size, cfg->blacklist_cap);
      if (p) {
        /* its owner from now on: this thread records there without the
         * lock (pool_owner.h); a lane made before may have been seen by a
         * snapshot */
        if (made) cp_pool_claim(p, t);
        else __atomic_store_n(&p->owner, me, __ATOMIC_RELAXED);
        __atomic_store_n(&c->lanes[i], p, __ATOMIC_RELEASE);
        __atomic_store_n(&c->lane_owner[i], me, __ATOMIC_RELEASE);
      }
      break;
    }
  cp_spin_unlock(&c->lanes_lock);
  if (!p) {
    /* every lane taken: share one, which then takes the lock for all */
    p = __atomic_load_n(&c->lanes[(me >> 6) % CP_LANES], __ATOMIC_ACQUIRE);
    if (!p) p = c->lanes[0];
    if (cp_pool_owner(p) != me) cp_pool_share(p);
  }
  return p;
}

/* ---- first init: process-wide set-up ---- */
static void pin_library(void) {
  /* NCCL dlcloses the plugin after its last communicator; the trace writer
   * and the exit-time output still run our code: keep it mapped. */
  Dl_info info;
  if (dladdr((void *)&pin_library, &info) && info.dli_fname) {
    void *h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NODELETE | RTLD_NOLOAD);
    (void)h;   /* the extra reference is never dropped, on purpose */
  }
}

static void after_fork_child(void) {
  atomic_store(&cp_hot.pid, (int)getpid());
  cp_cost_after_fork();
  cp_pool_owner_after_fork();
  cp_thr_after_fork();
  cp_registry_after_fork();
}

static void first_init(void) {
  cp_clock_init();
  cp_pool_owner_init();   /* before any pool has an owner */
  __atomic_store_n(&cp_thr_exit_hook, cp_kc_span_thread_end, __ATOMIC_RELEASE);
  pin_library();
  atomic_store(&cp_hot.pid, (int)getpid());
  pthread_atfork(NULL, NULL, after_fork_child);
  const cp_config *cfg = cp_config_get();
  cp_plug.id_send = cp_str_intern("Send");
  cp_plug.id_recv = cp_str_intern("Recv");
  cp_plug.id_init = cp_str_intern("ProfilerInit");
  cp_plug.id_fini = cp_str_intern("ProfilerFinalize");
  cp_plug.host_sample = cfg->host_sample;
  cp_plug.hs_target_ns = (uint64_t)cfg->host_sample_us * 1000;
  atomic_store(&cp_plug.detach, cp_pool_create(0, cfg->pool_size, cfg->blacklist_cap));
  int (*getver)(int *) = NULL;
  *(void **)&getver = dlsym(RTLD_DEFAULT, "ncclGetVersion");
  int v = 0;
  if (getver && getver(&v) == 0) atomic_store(&cp_plug.nccl_version, v);
  cp_plug.event_cost = cp_selfcost_measure();   /* trace still off here */
  cp_cost_start();   /* after the self-cost: its calls are not NCCL's */
  cp_capture_init();
  cp_lt_setup();
  cp_affinity_probe();
  /* With the trace off too: it registers the exit handler that writes the
   * rank file of a process that exits without finalizing every
   * communicator (many do), where the last finalize would have written it;
   * without it such a run with COLLPROF_TRACE=0 left no file at all. */
  cp_trace_start();
  atomic_store(&cp_hot.trace_on, cfg->trace_on ? 1 : 0);
  cp_defer_setup();   /* after the trace: its applier writes trace rings */
}

static void lifecycle(const cp_comm *c, uint64_t ctx, uint32_t mask, int fini) {
  if (!atomic_load_explicit(&cp_hot.trace_on, memory_order_relaxed)) return;
  cp_rec r;
  memset(&r, 0, sizeof r);
  r.kind = CP_REC_LIFECYCLE;
  r.rank = c->nccl_rank;
  r.comm = c->index;
  r.pid = atomic_load_explicit(&cp_hot.pid, memory_order_relaxed);
  r.start_tid = r.stop_tid = cp_gettid();
  r.func = fini ? cp_plug.id_fini : cp_plug.id_init;
  r.start_ns = r.stop_ns = cp_clock_now();
  r.ctx_addr = ctx;
  r.path = CP_PATH_NONE;
  r.d.lifecycle.event_mask = mask;
  r.d.lifecycle.is_finalize = (uint8_t)fini;
  cp_trace_put(&r);
}

/* ---- init / finalize ---- */
static ncclResult_t init_common(void **context, uint64_t comm_id, int *mask, const char *name,
                                int nnodes, int nranks, int rank, ncclDebugLogger_t logfn) {
  if (!context) { cp_bad_call(W_INIT_ARG, "init with a NULL context pointer"); return NCCL_INVALID_ARGUMENT; }
  *context = NULL;
  pthread_once(&first_once, first_init);
  if (atomic_load_explicit(&cp_hot.stopped, memory_order_relaxed)) {
    cp_bad_call(W_SHUTDOWN, "NCCL callback after collprof_shutdown(); ignored");
    return NCCL_OK;
  }
  int mask_in = mask ? __atomic_load_n(mask, __ATOMIC_RELAXED) : 0;
  uint32_t m = mask ? cp_mask_attach(mask) : 0;
  if (mask) cp_mask_comm_id(comm_id);
  char uuid[40];
  cp_cuda_uuid(uuid, sizeof uuid);
  cp_comm *c = cp_registry_add(comm_id, name, nnodes, nranks, rank, uuid);
  if (!c) {
    cp_bad_call(W_INIT_FAIL, "cannot register a communicator (too many, or out of memory); it is not profiled");
    return NCCL_SYSTEM_ERROR;
  }
  const unsigned ncomms = (unsigned)atomic_fetch_add(&cp_plug.active_comms, 1) + 1;
  /* the blocks and trace rings of the threads that record first made
   * now, not in their first callbacks: a calling thread and a proxy
   * thread per communicator (one thread driving several communicators
   * leaves some spare; a thread per GPU, as nccl-tests -t, needs them
   * all) */
  cp_thr_prepare(2 * ncomms);
  cp_trace_prepare(2 * ncomms);
  cp_bump_prepare();   /* new paths' texts (bump.h) */
  *context = (void *)(uintptr_t)c->ctx_value;
  lifecycle(c, c->ctx_value, m, 0);
  /* NCCL 2.28 runs a one-rank communicator's collectives as a local copy
   * before any profiler event (enqueue.cc, taskAppend: ncclLaunchOneRank),
   * and its send/recv to itself likewise: on one H200 the test app's calls
   * on one rank gave no event at all (test/gpu/run.sh 1).  An empty
   * profile says nothing by itself, so say it once (summary.log marks the
   * communicator too). */
  static atomic_int one_rank_said;
  if (nranks == 1 && !atomic_exchange_explicit(&one_rank_said, 1, memory_order_relaxed))
    cp_warn("communicator \"%s\" has one rank: NCCL sends no profiler event for its calls (it runs them as "
            "a local copy), so they are not in the profile; said once per process",
            c->comm_name);
  if (__atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED))
    cp_capture_comm_init(c->ctx_value, comm_id, c->comm_name, nnodes, nranks, rank, mask_in, (int)m);
  if (logfn)
    logfn(NCCL_LOG_INFO, NCCL_PROFILE_SUBSYS, __FILE__, __LINE__,
          "collprof: profiling communicator %s rank %d/%d (mask %u)", c->comm_name, rank, nranks, m);
  return NCCL_OK;
}

static ncclResult_t fini_common(void *context) {
  const uint64_t ctxv = (uint64_t)(uintptr_t)context;
  cp_defer_flush();   /* proxy-thread callbacks recorded so far reach the pools first */
  cp_comm *c = cp_registry_from_ctx(ctxv);
  if (!c) { cp_bad_call(W_FINI_CTX, "finalize with a context collprof did not create; ignored"); return NCCL_OK; }
  int was = 0;
  if (!__atomic_compare_exchange_n(&c->finalized, &was, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    cp_bad_call(W_DOUBLE_FINI, "finalize twice on one communicator; ignored");
    return NCCL_OK;
  }
  /* Its slots go now: a job that creates and destroys communicators in a
   * loop must not grow.  Pending GPU spans and live events are accounted
   * first; the pool structs and the registry entry stay (trace writer,
   * summary, and handles that still name the index).  Under lanes_lock: a
   * lane created from now on would see finalized and not be. */
  cp_spin_lock(&c->lanes_lock);
  atomic_store_explicit(&cp_hot.fini_any, 1, memory_order_relaxed);   /* before any lane's flag */
  for (uint32_t i = 0; i < CP_LANES; i++) {
    cp_pool *p = c->lanes[i];
    if (!p) continue;
    __atomic_store_n(&p->finalized, 1, __ATOMIC_RELAXED);
    cp_pool_excl_lock(p);   /* its owner may be another thread (pool_owner.h) */
    cp_pool_drain(p);       /* posts first: spans and child times of late children */
    cp_pool_release_chunks(p);
    cp_pool_drop_inbox(p);
    cp_pool_excl_unlock(p);
  }
  cp_spin_unlock(&c->lanes_lock);
  lifecycle(c, ctxv, 0, 1);
  if (__atomic_load_n(&cp_hot.capture_on, __ATOMIC_RELAXED)) cp_capture_fini(ctxv);
  if (atomic_fetch_sub(&cp_plug.active_comms, 1) == 1 && cp_output_on_last_finalize)
    cp_output_on_last_finalize();
  return NCCL_OK;
}

/* ---- v5 ---- */
static ncclResult_t v5_init(void **context, uint64_t commId, int *mask, const char *name, int nNodes,
                            int nranks, int rank, ncclDebugLogger_t logfn) {
  return init_common(context, commId, mask, name, nNodes, nranks, rank, logfn);
}
/* Proxy-thread types and their handles go to proxy_defer.c when it is on
 * (cp_defer_on is 0 otherwise: one load and a not-taken branch). */
static ncclResult_t v5_start(void *context, void **eHandle, ncclProfilerEventDescr_v5_t *d) {
  if (UNLIKELY(d && cp_defer_type(d->type))) return cp_defer_start(context, eHandle, d, 0);
  return cp_core_start(context, eHandle, d, 0);
}
CP_EXPORT ncclProfiler_v5_t ncclProfiler_v5 = {
  "collprof", v5_init, v5_start, cp_api_stop, cp_v5_state, fini_common,
};

/* ---- v4: uint8_t type, no API events, Coll/P2p parent is the Group ---- */
static ncclResult_t v4_init(void **context, int *mask, const char *name, uint64_t commHash, int nNodes,
                            int nranks, int rank, ncclDebugLogger_t logfn) {
  cp_mask_api_v4();
  return init_common(context, commHash, mask, name, nNodes, nranks, rank, logfn);
}

static void v4_to_v5(const ncclProfilerEventDescr_v4_t *a, ncclProfilerEventDescr_v5_t *b) {
  memset(b, 0, sizeof *b);
  b->type = a->type;
  b->parentObj = a->parentObj;
  b->rank = a->rank;
  switch (a->type) {
  case ncclProfileColl:
    b->coll.seqNumber = a->coll.seqNumber; b->coll.func = a->coll.func;
    b->coll.sendBuff = a->coll.sendBuff; b->coll.recvBuff = a->coll.recvBuff;
    b->coll.count = a->coll.count; b->coll.root = a->coll.root;
    b->coll.datatype = a->coll.datatype; b->coll.nChannels = a->coll.nChannels;
    b->coll.nWarps = a->coll.nWarps; b->coll.algo = a->coll.algo; b->coll.proto = a->coll.proto;
    break;
  case ncclProfileP2p:
    b->p2p.func = a->p2p.func; b->p2p.buff = a->p2p.buff; b->p2p.datatype = a->p2p.datatype;
    b->p2p.count = a->p2p.count; b->p2p.peer = a->p2p.peer; b->p2p.nChannels = a->p2p.nChannels;
    break;
  case ncclProfileProxyOp:
    b->proxyOp.pid = a->proxyOp.pid; b->proxyOp.channelId = a->proxyOp.channelId;
    b->proxyOp.peer = a->proxyOp.peer; b->proxyOp.nSteps = a->proxyOp.nSteps;
    b->proxyOp.chunkSize = a->proxyOp.chunkSize; b->proxyOp.isSend = a->proxyOp.isSend;
    break;
  case ncclProfileProxyStep: b->proxyStep.step = a->proxyStep.step; break;
  case ncclProfileKernelCh:
    b->kernelCh.channelId = a->kernelCh.channelId; b->kernelCh.pTimer = a->kernelCh.pTimer;
    break;
  case ncclProfileNetPlugin: b->netPlugin.id = a->netPlugin.id; b->netPlugin.data = a->netPlugin.data; break;
  default: break;
  }
}

static ncclResult_t v4_start(void *context, void **eHandle, ncclProfilerEventDescr_v4_t *d) {
  if (!d) return cp_core_start(context, eHandle, NULL, 1);
  ncclProfilerEventDescr_v5_t v5;
  v4_to_v5(d, &v5);
  if (UNLIKELY(cp_defer_type(v5.type))) return cp_defer_start(context, eHandle, &v5, 1);
  return cp_core_start(context, eHandle, &v5, 1);
}
CP_EXPORT ncclProfiler_v4_t ncclProfiler_v4 = {
  "collprof", v4_init, v4_start, cp_api_stop, cp_v4_state, fini_common,
};

/* ---- the timing wrappers (cost_sample.c): each callback's own time ---- */
#define TIMED(call)                              \
  do {                                           \
    const uint64_t o0_ = cp_oneoff_mine();       \
    const uint64_t t0_ = cp_cost_begin();        \
    const ncclResult_t r_ = (call);              \
    cp_cost_end(t0_, o0_);                       \
    return r_;                                   \
  } while (0)
static ncclResult_t t5_start(void *context, void **eHandle, ncclProfilerEventDescr_v5_t *d) {
  TIMED(v5_start(context, eHandle, d));
}
static ncclResult_t t_stop(void *eHandle) { TIMED(cp_api_stop(eHandle)); }
static ncclResult_t t5_state(void *eHandle, ncclProfilerEventState_v5_t st, ncclProfilerEventStateArgs_v5_t *a) {
  TIMED(cp_v5_state(eHandle, st, a));
}
static ncclResult_t t4_start(void *context, void **eHandle, ncclProfilerEventDescr_v4_t *d) {
  TIMED(v4_start(context, eHandle, d));
}
static ncclResult_t t4_state(void *eHandle, ncclProfilerEventState_v4_t st, ncclProfilerEventStateArgs_v4_t *a) {
  TIMED(cp_v4_state(eHandle, st, a));
}
#undef TIMED

/* NCCL calls through the struct it looked up (its loader keeps a pointer
 * to our symbol), so what these members name is what the next callback
 * runs.  Pointer-sized aligned stores: a thread of NCCL's that reads the
 * member at the same time gets the old function or the new one. */
void cp_plugin_timed(int on) {
  __atomic_store_n(&ncclProfiler_v5.startEvent, on ? t5_start : v5_start, __ATOMIC_RELEASE);
  __atomic_store_n(&ncclProfiler_v5.stopEvent, on ? t_stop : cp_api_stop, __ATOMIC_RELEASE);
  __atomic_store_n(&ncclProfiler_v5.recordEventState, on ? t5_state : cp_v5_state, __ATOMIC_RELEASE);
  __atomic_store_n(&ncclProfiler_v4.startEvent, on ? t4_start : v4_start, __ATOMIC_RELEASE);
  __atomic_store_n(&ncclProfiler_v4.stopEvent, on ? t_stop : cp_api_stop, __ATOMIC_RELEASE);
  __atomic_store_n(&ncclProfiler_v4.recordEventState, on ? t4_state : cp_v4_state, __ATOMIC_RELEASE);
}
