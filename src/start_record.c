/*
 * start_record.c — a recorded start's trace record in its full form
 * (trace.h, cp_rec): a PXN event's, a pseudo-path's (unknown parent, path
 * table full), and a Coll's whose details do not pack into a compact
 * record.  The compact form is start_record.h's, inline on the common
 * path; this file is the out-of-line rest, kept off it.
 */
#include <stdint.h>
#include <string.h>
#include "nccl_profiler_abi.h"
#pragma GCC visibility push(hidden)
#include "start_record.h"

/* A Coll's trace details in a full record: a PXN Coll's, or one whose
 * details do not pack into a compact one (trace.h, cp_erec_coll_pack).
 * Pool lock held: string lookups hit the per-thread cache; dt is the
 * datatype id already interned. */
static void coll_details(cp_thr *t, cp_rec *r, const ncclProfilerEventDescr_v5_t *d, uint32_t dt) {
  r->d.coll.seq = d->coll.seqNumber;
  r->d.coll.count = d->coll.count;
  r->d.coll.datatype = dt;
  r->d.coll.algo = cp_str_intern_t(t, d->coll.algo);
  r->d.coll.proto = cp_str_intern_t(t, d->coll.proto);
  r->d.coll.root = d->coll.root;
  r->d.coll.channels = d->coll.nChannels;
  r->d.coll.nwarps = d->coll.nWarps;
}

/* Trace on: the event record is built in the slot at start (pool lock held)
 * and copied once, at stop, into the ring: the compact form where the
 * writer can fill in the rest, else the full one (start_record.h). */
void cp_start_record(cp_thr *t, cp_slot *s, const ncclProfilerEventDescr_v5_t *d, const cp_comm *comm, int pxn,
                     uint32_t type, uint32_t path, int mypid, uint32_t func, uint32_t dt, uint64_t now, uint64_t pobj,
                     uint64_t handle, uint64_t ctxv) {
  if (LIKELY(comm && !pxn && path < CP_PATH_PXN && ctxv == comm->ctx_value) &&
      LIKELY(start_record_c(t, &s->erec, d, type, path, comm->index, dt, now, pobj, handle)))
    return;
  cp_rec *r = &s->rec;
  /* Every header field is written; only the details are zeroed first. */
  r->kind = CP_REC_EVENT;
  r->is_pxn = (uint8_t)pxn;
  r->state_arg_kind = 0;
  r->pad0 = 0;
  r->type = type;
  r->path = path;
  r->rank = comm ? comm->nccl_rank : -1;
  r->comm = comm ? comm->index : 0;
  r->pid = mypid;
  r->start_tid = t->tid;
  r->stop_tid = 0;
  r->origin_pid = pxn ? s->origin_pid : 0;   /* set for PXN events only (cp_pool_reset_slot) */
  r->func = func;
  r->start_ns = now;
  r->stop_ns = 0;
  r->parent_obj = pobj;
  r->event_addr = handle;
  r->ctx_addr = ctxv;
  memset(&r->d, 0, sizeof r->d);
  if (type == ncclProfileColl) {   /* PXN, a pseudo-path, or details a compact record cannot hold */
    coll_details(t, r, d, dt);
  } else {   /* PXN, or a pseudo-path (unknown parent, table full): details as a compact record has them */
    cp_erec e;
    memset(&e, 0, sizeof e);
    compact_details(t, &e, d, type, dt);
    cp_erec_details(&e, type, r);
  }
}
