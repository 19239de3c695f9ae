/*
 * nccl_profiler_abi.h — the NCCL profiler plugin interface (v5 for NCCL 2.28,
 * v4 for NCCL 2.27), declared by collprof from shared/docs/nccl-profiler-abi.md.
 *
 * No NCCL header is copied or included: every type below is written from the
 * documented member order, and the layout NCCL was measured to use on x86-64
 * is pinned with _Static_assert so that a mistake fails the build, not a job.
 */
#ifndef COLLPROF_NCCL_PROFILER_ABI_H
#define COLLPROF_NCCL_PROFILER_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef int ncclResult_t;            /* NCCL's enum, int-sized */
enum {
  NCCL_OK = 0, NCCL_UNHANDLED_CUDA_ERROR = 1, NCCL_SYSTEM_ERROR = 2,
  NCCL_INTERNAL_ERROR = 3, NCCL_INVALID_ARGUMENT = 4, NCCL_INVALID_USAGE = 5,
  NCCL_REMOTE_ERROR = 6
};

/* Logger NCCL hands to init: level 0 none .. 5 trace; flags 16384 = profiler. */
typedef void (*ncclDebugLogger_t)(int level, unsigned long flags,
                                  const char *file, int line,
                                  const char *fmt, ...);
#define NCCL_LOG_WARN 2
#define NCCL_LOG_INFO 3
#define NCCL_PROFILE_SUBSYS 16384UL

/* Event types: bits of descr->type and of the activation mask (NCCL's values). */
enum {
  ncclProfileGroup = 1,
  ncclProfileColl = 2,
  ncclProfileP2p = 4,
  ncclProfileProxyOp = 8,
  ncclProfileProxyStep = 16,
  ncclProfileProxyCtrl = 32,
  ncclProfileKernelCh = 64,
  ncclProfileNetPlugin = 128,
  ncclProfileGroupApi = 256,
  ncclProfileCollApi = 512,
  ncclProfileP2pApi = 1024,
  ncclProfileKernelLaunch = 2048,
};
#define NCCL_PROFILE_ALL_EVENTS 4095

/* The name of an event type: NCCL's own ("ncclProfileColl", used in trace
 * records) or the short one used in call paths ("Coll").  NULL when `type`
 * is not exactly one known bit.  One definition for the plugin, the
 * collation and the tools, so the names cannot drift apart. */
static inline const char *ncclProfileTypeName(uint64_t type, int short_name) {
  static const char *const full[12] = {
    "ncclProfileGroup", "ncclProfileColl", "ncclProfileP2p", "ncclProfileProxyOp",
    "ncclProfileProxyStep", "ncclProfileProxyCtrl", "ncclProfileKernelCh",
    "ncclProfileNetPlugin", "ncclProfileGroupApi", "ncclProfileCollApi",
    "ncclProfileP2pApi", "ncclProfileKernelLaunch"};
  if (type == 0 || (type & (type - 1)) || type > ncclProfileKernelLaunch) return NULL;
  const char *n = full[__builtin_ctzll(type)];
  return short_name ? n + 11 : n;    /* strlen("ncclProfile") */
}

/* Event states (eState). */
typedef enum {
  ncclProfilerProxyOpInProgress_v4 = 19,
  ncclProfilerProxyStepSendGPUWait = 8,
  ncclProfilerProxyStepSendPeerWait_v4 = 20,
  ncclProfilerProxyStepSendWait = 9,
  ncclProfilerProxyStepRecvWait = 10,
  ncclProfilerProxyStepRecvFlushWait = 11,
  ncclProfilerProxyStepRecvGPUWait = 12,
  ncclProfilerProxyCtrlIdle = 13,
  ncclProfilerProxyCtrlActive = 14,
  ncclProfilerProxyCtrlSleep = 15,
  ncclProfilerProxyCtrlWakeup = 16,
  ncclProfilerProxyCtrlAppend = 17,
  ncclProfilerProxyCtrlAppendEnd = 18,
  ncclProfilerNetPluginUpdate = 21,
  ncclProfilerKernelChStop = 22,
  ncclProfilerGroupStartApiStop = 23,
  ncclProfilerGroupEndApiStart = 24,
} ncclProfilerEventState_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v5_t;
typedef ncclProfilerEventState_t ncclProfilerEventState_v4_t;

/* ---- v5 descriptor (NCCL 2.28): 112 bytes ---- */
typedef struct {
  uint64_t type;
  void *parentObj;
  int rank;
  union {
    struct { bool graphCaptured; int groupDepth; } groupApi;
    struct { const char *func; size_t count; const char *datatype; int root;
             void *stream; bool graphCaptured; } collApi;
    struct { const char *func; size_t count; const char *datatype;
             void *stream; bool graphCaptured; } p2pApi;
    struct { void *stream; } kernelLaunch;
    struct { uint64_t seqNumber; const char *func; const void *sendBuff;
             void *recvBuff; size_t count; int root; const char *datatype;
             uint8_t nChannels; uint8_t nWarps; const char *algo;
             const char *proto; void *parentGroup; } coll;
    struct { const char *func; void *buff; const char *datatype; size_t count;
             int peer; uint8_t nChannels; void *parentGroup; } p2p;
    struct { pid_t pid; uint8_t channelId; int peer; int nSteps;
             int chunkSize; int isSend; } proxyOp;
    struct { int step; } proxyStep;
    struct { uint8_t channelId; uint64_t pTimer; } kernelCh;
    struct { int64_t id; void *data; } netPlugin;
  };
} ncclProfilerEventDescr_v5_t;

typedef union {
  size_t transSize;          /* ProxyStep states */
  int appendedProxyOps;      /* ProxyCtrl AppendEnd */
  void *data;                /* NetPlugin */
  uint64_t pTimer;           /* KernelCh stop (state 22) */
} ncclProfilerEventStateArgs_v5_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, uint64_t commId, int *eActivationMask,
                       const char *commName, int nNodes, int nranks, int rank,
                       ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void *context, void **eHandle,
                             ncclProfilerEventDescr_v5_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle,
                                   ncclProfilerEventState_v5_t eState,
                                   ncclProfilerEventStateArgs_v5_t *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} ncclProfiler_v5_t;

/* ---- v4 descriptor (NCCL 2.27): uint8_t type, no API events ---- */
typedef struct {
  uint8_t type;
  void *parentObj;
  int rank;
  union {
    struct { uint64_t seqNumber; const char *func; const void *sendBuff;
             void *recvBuff; size_t count; int root; const char *datatype;
             uint8_t nChannels; uint8_t nWarps; const char *algo;
             const char *proto; } coll;
    struct { const char *func; void *buff; const char *datatype; size_t count;
             int peer; uint8_t nChannels; } p2p;
    struct { pid_t pid; uint8_t channelId; int peer; int nSteps;
             int chunkSize; int isSend; } proxyOp;
    struct { int step; } proxyStep;
    struct { uint8_t channelId; uint64_t pTimer; } kernelCh;
    struct { int64_t id; void *data; } netPlugin;
  };
} ncclProfilerEventDescr_v4_t;

typedef union {
  size_t transSize;
  int appendedProxyOps;
  void *data;
  uint64_t pTimer;
} ncclProfilerEventStateArgs_v4_t;

typedef struct {
  const char *name;
  ncclResult_t (*init)(void **context, int *eActivationMask,
                       const char *commName, uint64_t commHash, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void *context, void **eHandle,
                             ncclProfilerEventDescr_v4_t *eDescr);
  ncclResult_t (*stopEvent)(void *eHandle);
  ncclResult_t (*recordEventState)(void *eHandle,
                                   ncclProfilerEventState_v4_t eState,
                                   ncclProfilerEventStateArgs_v4_t *eStateArgs);
  ncclResult_t (*finalize)(void *context);
} ncclProfiler_v4_t;

/* Layout NCCL 2.28.9 was measured to use on x86-64 (ABI doc). */
#if defined(__x86_64__)
_Static_assert(sizeof(ncclProfilerEventDescr_v5_t) == 112, "v5 descriptor is 112 bytes");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, parentObj) == 8, "parentObj at 8");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, rank) == 16, "rank at 16");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.seqNumber) == 24, "coll.seqNumber at 24");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.func) == 32, "coll.func at 32");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.nChannels) == 80, "coll.nChannels at 80");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.algo) == 88, "coll.algo at 88");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.parentGroup) == 104, "coll.parentGroup at 104");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, proxyOp.pid) == 24, "proxyOp.pid at 24");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, proxyOp.channelId) == 28, "proxyOp.channelId at 28");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, proxyOp.peer) == 32, "proxyOp.peer at 32");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, proxyOp.isSend) == 44, "proxyOp.isSend at 44");
_Static_assert(offsetof(ncclProfilerEventDescr_v5_t, kernelCh.pTimer) == 32, "kernelCh.pTimer at 32");
_Static_assert(sizeof(ncclProfilerEventStateArgs_v5_t) == 8, "state args are 8 bytes");
_Static_assert(sizeof(ncclProfiler_v5_t) == 6 * sizeof(void *), "name + five functions");
_Static_assert(offsetof(ncclProfilerEventDescr_v4_t, parentObj) == 8, "v4 parentObj at 8");
_Static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll.seqNumber) == 24, "v4 coll at 24");
_Static_assert(sizeof(ncclProfiler_v4_t) == 6 * sizeof(void *), "v4 name + five functions");
#endif

#endif
