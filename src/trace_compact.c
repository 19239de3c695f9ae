/*
 * trace_compact.c — the compact ring records (trace.h: cp_srec, one unit,
 * for a state; cp_erec, two units, for most events) turned back into the
 * full cp_rec that trace_json.c formats.  Runs on the writer thread (and
 * in the signal-time flush), never on a callback: what the hot path left
 * out to write fewer bytes is looked up here instead (registry, path
 * table, the process id, the ring's owner).
 */
#include "trace.h"
#include "trace_writer.h"
#include "nccl_profiler_abi.h"
#include "paths.h"
#include "registry.h"
#include <string.h>

void cp_srec_expand(const cp_srec *s, cp_rec *r) {
  memset(r, 0, sizeof *r);
  r->kind = CP_REC_STATE;
  r->is_pxn = (s->flags >> 3) & 1;
  r->state_arg_kind = s->flags & 7;
  r->path = s->state;
  const cp_comm *c = r->is_pxn ? NULL : cp_registry_get((uint32_t)(s->handle >> 32) & 0xFFFu);
  r->rank = c ? c->nccl_rank : -1;
  r->comm = c ? c->index : 0;
  r->pid = cp_trace_pid();
  r->start_tid = r->stop_tid = s->tid;
  r->start_ns = r->stop_ns = s->ts;
  r->event_addr = s->handle;
  r->d.state.arg = s->arg;
}

void cp_erec_expand(const cp_erec *e, int32_t stop_tid, cp_rec *r) {
  memset(r, 0, sizeof *r);
  const uint32_t type = 1u << (e->type_bit & 31);
  const cp_comm *c = cp_registry_get(e->comm);
  r->kind = CP_REC_EVENT;
  r->type = type;
  r->path = e->path;
  r->rank = c ? c->nccl_rank : -1;
  r->comm = e->comm;
  r->pid = cp_trace_pid();
  r->start_tid = e->start_tid;
  r->stop_tid = stop_tid;
  r->func = cp_path_func(e->path);
  r->start_ns = e->start_ns;
  r->stop_ns = e->stop_ns;
  r->parent_obj = e->parent_obj;
  r->event_addr = e->event_addr;
  r->ctx_addr = c ? c->ctx_value : 0;
  cp_erec_details(e, type, r);
}

void cp_erec_details(const cp_erec *e, uint32_t type, cp_rec *r) {
  switch (type) {
  case ncclProfileGroupApi:
    r->d.group_api.group_depth = e->d.group_api.group_depth;
    r->d.group_api.graph_captured = e->d.group_api.graph_captured;
    break;
  case ncclProfileCollApi:
  case ncclProfileP2pApi:
    r->d.coll_api.count = e->d.coll_api.count;
    r->d.coll_api.datatype = e->x;
    r->d.coll_api.root = e->d.coll_api.root;
    r->d.coll_api.graph_captured = e->d.coll_api.graph_captured;
    break;
  case ncclProfileKernelLaunch:
    r->d.kernel_launch.stream = e->d.kernel_launch.stream;
    break;
  case ncclProfileP2p:
    r->d.p2p.count = e->d.p2p.count;
    r->d.p2p.datatype = e->x;
    r->d.p2p.peer = e->d.p2p.peer;
    r->d.p2p.channels = e->d.p2p.channels;
    break;
  case ncclProfileProxyOp:
    r->d.proxy_op.peer = e->d.proxy_op.peer;
    r->d.proxy_op.nsteps = e->d.proxy_op.nsteps;
    r->d.proxy_op.chunk_size = e->d.proxy_op.chunk_size;
    r->d.proxy_op.is_send = e->d.proxy_op.is_send;
    r->d.proxy_op.channel = e->d.proxy_op.channel;
    break;
  case ncclProfileProxyStep:
    r->d.proxy_step.step = e->d.proxy_step.step;
    break;
  case ncclProfileKernelCh:
    r->d.kernel_ch.gpu_start = e->d.kernel_ch.gpu_start;
    r->d.kernel_ch.gpu_stop = e->d.kernel_ch.gpu_stop;
    r->d.kernel_ch.channel = (uint8_t)e->x;
    break;
  case ncclProfileNetPlugin:
    r->d.net_plugin.id = e->d.net_plugin.id;
    break;
  case ncclProfileColl:   /* trace.h, cp_erec_coll_pack */
    r->d.coll.seq = e->d.coll.seq_ap & 0xFFFFFFFFFFFFull;
    r->d.coll.algo = (uint32_t)(e->d.coll.seq_ap >> 48) & 0xFFu;
    r->d.coll.proto = (uint32_t)(e->d.coll.seq_ap >> 56);
    r->d.coll.count = e->d.coll.count_root & 0xFFFFFFFFFFFFull;
    r->d.coll.root = (int32_t)(e->d.coll.count_root >> 48) - 1;
    r->d.coll.datatype = e->x;
    r->d.coll.channels = (uint8_t)e->y;
    r->d.coll.nwarps = (uint8_t)(e->y >> 8);
    break;
  default:
    break;
  }
}
