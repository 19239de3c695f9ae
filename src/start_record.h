/*
 * start_record.h — a recorded start's trace record, built in its slot
 * (pool lock held) and copied once into the ring at the event's stop
 * (event_stop.c).  The compact form (trace.h, cp_erec), which the writer
 * completes from the path and communicator tables, is written inline on
 * the common path (start_recorded, event_start.c); the full form, for PXN
 * events, pseudo-paths and Colls whose details do not pack, is
 * cp_start_record (start_record.c), out of line.
 */
#ifndef COLLPROF_START_RECORD_H
#define COLLPROF_START_RECORD_H
#include <stdint.h>
#include <string.h>
#include "nccl_profiler_abi.h"
#pragma GCC visibility push(hidden)
#include "callback_core.h"
#include "coll_memo.h"
#include "strtab.h"
#include "trace.h"

/* The details as a compact record holds them (trace.h, cp_erec: d, x, y);
 * r zeroed by the caller.  0 for a Coll whose details do not fit
 * (cp_erec_coll_pack): it takes the full record. */
static inline __attribute__((always_inline)) int compact_details(cp_thr *t, cp_erec *r,
                                                                 const ncclProfilerEventDescr_v5_t *d,
                                                                 uint32_t type, uint32_t dt) {
  switch (type) {
  case ncclProfileColl:
    return cp_erec_coll_pack(r, d->coll.seqNumber, d->coll.count, d->coll.root, dt,
                             cp_str_intern_t(t, d->coll.algo), cp_str_intern_t(t, d->coll.proto),
                             (uint8_t)d->coll.nChannels, (uint8_t)d->coll.nWarps);
  case ncclProfileGroupApi:
    r->d.group_api.group_depth = d->groupApi.groupDepth;
    r->d.group_api.graph_captured = d->groupApi.graphCaptured;
    break;
  case ncclProfileCollApi:
    r->d.coll_api.count = d->collApi.count;
    r->x = cp_str_intern_t(t, d->collApi.datatype);
    r->d.coll_api.root = d->collApi.root;
    r->d.coll_api.graph_captured = d->collApi.graphCaptured;
    break;
  case ncclProfileP2pApi:
    r->d.coll_api.count = d->p2pApi.count;
    r->x = cp_str_intern_t(t, d->p2pApi.datatype);
    r->d.coll_api.graph_captured = d->p2pApi.graphCaptured;
    break;
  case ncclProfileKernelLaunch:
    r->d.kernel_launch.stream = (uint64_t)(uintptr_t)d->kernelLaunch.stream;
    break;
  case ncclProfileP2p:
    r->d.p2p.count = d->p2p.count;
    r->x = dt;
    r->d.p2p.peer = d->p2p.peer;
    r->d.p2p.channels = d->p2p.nChannels;
    break;
  case ncclProfileProxyOp:
    r->d.proxy_op.peer = d->proxyOp.peer;
    r->d.proxy_op.nsteps = d->proxyOp.nSteps;
    r->d.proxy_op.chunk_size = d->proxyOp.chunkSize;
    r->d.proxy_op.is_send = d->proxyOp.isSend;
    r->d.proxy_op.channel = d->proxyOp.channelId;
    break;
  case ncclProfileProxyStep:
    r->d.proxy_step.step = d->proxyStep.step;
    break;
  case ncclProfileKernelCh:
    r->d.kernel_ch.gpu_start = d->kernelCh.pTimer;
    r->x = d->kernelCh.channelId;
    break;
  case ncclProfileNetPlugin:
    r->d.net_plugin.id = d->netPlugin.id;
    break;
  default:
    break;
  }
  return 1;
}

/* A compact record's header (trace.h, cp_erec), the rest zeroed. */
static inline __attribute__((always_inline)) void erec_head(const cp_thr *t, cp_erec *r, uint32_t type,
                                                            uint32_t path, uint32_t comm, uint64_t now,
                                                            uint64_t pobj, uint64_t handle) {
  memset(r, 0, sizeof *r);
  r->kind = CP_REC_EVENT_C;
  r->type_bit = (uint8_t)__builtin_ctz(type);
  r->path = (uint16_t)path;
  r->comm = (uint16_t)comm;
  r->start_tid = t->tid;
  r->start_ns = now;
  r->parent_obj = pobj;
  r->event_addr = handle;
}
/* The compact record of an event that may have one: not PXN, on a real
 * path of a registered communicator.  0 where it has none (a Coll whose
 * details do not fit): the caller writes the full record over it. */
static inline __attribute__((always_inline)) int start_record_c(cp_thr *t, cp_erec *r,
                                                                 const ncclProfilerEventDescr_v5_t *d,
                                                                 uint32_t type, uint32_t path, uint32_t comm,
                                                                 uint32_t dt, uint64_t now, uint64_t pobj,
                                                                 uint64_t handle) {
  erec_head(t, r, type, path, comm, now, pobj, handle);
  return compact_details(t, r, d, type, dt);
}
/* The same for a Coll whose lookups the memo had (coll_memo.h): its ids
 * from there, nothing interned. */
static inline __attribute__((always_inline)) int start_record_cm(const cp_thr *t, cp_erec *r,
                                                                  const ncclProfilerEventDescr_v5_t *d,
                                                                  const cp_rmemo_ent *m, uint32_t comm,
                                                                  uint64_t now, uint64_t pobj, uint64_t handle) {
  erec_head(t, r, ncclProfileColl, m->path, comm, now, pobj, handle);
  return cp_erec_coll_pack(r, d->coll.seqNumber, d->coll.count, d->coll.root, m->dt_id, m->algo_id, m->proto_id,
                           (uint8_t)d->coll.nChannels, (uint8_t)d->coll.nWarps);
}

/* start_record.c: the record of any recorded start, in the slot s (pool
 * lock held): the compact form where it fits, else the full one.  The
 * callers try the compact form inline first; this is their way for the
 * rest (and start_general's for every event). */
void cp_start_record(cp_thr *t, cp_slot *s, const ncclProfilerEventDescr_v5_t *d, const cp_comm *comm, int pxn,
                     uint32_t type, uint32_t path, int mypid, uint32_t func, uint32_t dt, uint64_t now, uint64_t pobj,
                     uint64_t handle, uint64_t ctxv);

#pragma GCC visibility pop
#endif
