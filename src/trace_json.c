/*
 * trace_json.c — cp_rec -> one JSON line, field for field as
 * shared/docs/trace-format.md writes them (see trace_json.h).
 *
 * Hand-written formatting (jfmt.h): the writer thread must keep up with
 * millions of records per second.  Strings are interned ids resolved with
 * cp_str_get; communicator fields come from the registry entry the record
 * names.  PXN events were issued by another process: commId "0", rank -1,
 * gpuUuid "", no ctx, originPid, isPxn true.  Choices the format leaves
 * open: graphCaptured is written as a JSON boolean; lifecycle records have
 * no "path" (they are not on a call path); a NULL handle is null.
 */
#include "nccl_profiler_abi.h"
#include "trace_json.h"
#include "jfmt.h"
#include "registry.h"
#include "strtab.h"

#pragma GCC visibility push(hidden)

#define STR_MAX 256   /* escaped bytes per NCCL string */

const char *cp_type_name(uint32_t type) {
  const char *n = ncclProfileTypeName(type, 0);
  return n ? n : "";
}

static const char *const state_names[] = {
    [8] = "ProxyStepSendGPUWait",   [9] = "ProxyStepSendWait",
    [10] = "ProxyStepRecvWait",     [11] = "ProxyStepRecvFlushWait",
    [12] = "ProxyStepRecvGPUWait",  [13] = "ProxyCtrlIdle",
    [14] = "ProxyCtrlActive",       [15] = "ProxyCtrlSleep",
    [16] = "ProxyCtrlWakeup",       [17] = "ProxyCtrlAppend",
    [18] = "ProxyCtrlAppendEnd",    [19] = "ProxyOpInProgress",
    [20] = "ProxyStepSendPeerWait", [21] = "NetPluginUpdate",
    [22] = "KernelChStop",          [23] = "GroupStartApiStop",
    [24] = "GroupEndApiStart"};

const char *cp_state_name(uint32_t s) {
  return s < sizeof state_names / sizeof state_names[0] ? state_names[s] : NULL;
}

/* ---- what consecutive lines share, formatted once ----
 * One formatter runs at a time (the writer under the io lock, or the
 * signal-time flush that took it), so plain statics do.  A timestamp's
 * digits above its last five microsecond digits change every 100 ms; a
 * thread's ",pid,tid" and a communicator's ctx do not change.  The copies
 * are of fixed size (into buffers of CP_TRACE_JSON_MAX): the bytes past
 * the text are overwritten by what follows or lie beyond the line. */
static uint64_t c_hi = UINT64_MAX;    /* microseconds / 100000 last formatted */
static char c_hi_txt[24];
static unsigned c_hi_len;
static int32_t c_pid = INT32_MIN, c_tid = INT32_MIN;
static char c_pt[48];                 /* ",\"pid\":P,\"tid\":T" */
static unsigned c_pt_len;

/* ns as microseconds with three decimals, as jf_us3 writes them. */
static inline char *us3(char *p, uint64_t ns) {
  const uint64_t us = ns / 1000, hi = us / 100000;
  if (hi == 0) return jf_us3(p, ns);
  if (hi != c_hi) {
    c_hi_len = (unsigned)(jf_u64(c_hi_txt, hi) - c_hi_txt);
    c_hi = hi;
  }
  memcpy(p, c_hi_txt, 16);            /* hi has at most 15 digits */
  p += c_hi_len;
  const uint32_t lo = (uint32_t)(us - hi * 100000), f = (uint32_t)(ns - us * 1000);
  const uint32_t r = lo % 1000;
  memcpy(p, jf_pairs + 2 * (lo / 1000), 2);
  memcpy(p + 2, jf_pairs + 2 * (r / 10), 2);
  p[4] = (char)('0' + r % 10);
  p[5] = '.';
  memcpy(p + 6, jf_pairs + 2 * (f / 10), 2);
  p[8] = (char)('0' + f % 10);
  return p + 9;
}

/* ,"pid":P,"tid":T */
static inline char *pid_tid(char *p, int32_t pid, int32_t tid) {
  if (pid != c_pid || tid != c_tid) {
    char *q = JF_LIT(c_pt, ",\"pid\":");
    q = jf_i64(q, pid);
    q = JF_LIT(q, ",\"tid\":");
    q = jf_i64(q, tid);
    c_pt_len = (unsigned)(q - c_pt);
    c_pid = pid;
    c_tid = tid;
  }
  memcpy(p, c_pt, 40);                /* at most 7 + 11 + 7 + 11 bytes */
  return p + c_pt_len;
}

/* ,"ctx":"0x..." of the communicator the last line named */
static uint64_t c_ctx;
static char c_ctx_txt[48];
static unsigned c_ctx_len;
static inline char *ctx_field(char *p, uint64_t ctx) {
  if (ctx != c_ctx || !c_ctx_len) {
    char *q = JF_LIT(c_ctx_txt, ",\"ctx\":");
    q = jf_ptr(q, ctx);
    c_ctx_len = (unsigned)(q - c_ctx_txt);
    c_ctx = ctx;
  }
  memcpy(p, c_ctx_txt, 32);           /* ,"ctx":"0x + 16 digits + " is 27 bytes */
  return p + c_ctx_len;
}

static char *ts_obj(char *p, uint64_t ns, int32_t pid, int32_t tid) {
  p = JF_LIT(p, "{\"ts\":");
  p = us3(p, ns);
  p = pid_tid(p, pid, tid);
  *p++ = '}';
  return p;
}

/* An interned string: its JSON form was made once, at interning. */
static char *sid(char *p, uint32_t id) {
  size_t n;
  const char *j = cp_str_json(id, &n);
  memcpy(p, j, n);
  return p + n;
}
_Static_assert(CP_STR_JSON_MAX == STR_MAX, "interned strings are cut where other NCCL strings are");

static char *details(char *p, const cp_rec *r) {
  p = JF_LIT(p, "\"details\":{");
  switch (r->type) {
  case 256: /* GroupApi */
    p = JF_LIT(p, "\"groupDepth\":");
    p = jf_i64(p, r->d.group_api.group_depth);
    p = JF_LIT(p, ",\"graphCaptured\":");
    p = jf_bool(p, r->d.group_api.graph_captured);
    break;
  case 512:  /* CollApi */
  case 1024: /* P2pApi */
    p = JF_LIT(p, "\"func\":");
    p = sid(p, r->func);
    p = JF_LIT(p, ",\"count\":");
    p = jf_u64(p, r->d.coll_api.count);
    p = JF_LIT(p, ",\"datatype\":");
    p = sid(p, r->d.coll_api.datatype);
    if (r->type == 512) {
      p = JF_LIT(p, ",\"root\":");
      p = jf_i64(p, r->d.coll_api.root);
    }
    p = JF_LIT(p, ",\"graphCaptured\":");
    p = jf_bool(p, r->d.coll_api.graph_captured);
    break;
  case 2048: /* KernelLaunch */
    p = JF_LIT(p, "\"stream\":");
    p = jf_ptr(p, r->d.kernel_launch.stream);
    break;
  case 2: /* Coll */
    p = JF_LIT(p, "\"func\":");
    p = sid(p, r->func);
    p = JF_LIT(p, ",\"seq\":");
    p = jf_u64(p, r->d.coll.seq);
    p = JF_LIT(p, ",\"count\":");
    p = jf_u64(p, r->d.coll.count);
    p = JF_LIT(p, ",\"datatype\":");
    p = sid(p, r->d.coll.datatype);
    p = JF_LIT(p, ",\"root\":");
    p = jf_i64(p, r->d.coll.root);
    p = JF_LIT(p, ",\"algo\":");
    p = sid(p, r->d.coll.algo);
    p = JF_LIT(p, ",\"proto\":");
    p = sid(p, r->d.coll.proto);
    p = JF_LIT(p, ",\"channels\":");
    p = jf_u64(p, r->d.coll.channels);
    p = JF_LIT(p, ",\"nWarps\":");
    p = jf_u64(p, r->d.coll.nwarps);
    break;
  case 4: /* P2p */
    p = JF_LIT(p, "\"func\":");
    p = sid(p, r->func);
    p = JF_LIT(p, ",\"peer\":");
    p = jf_i64(p, r->d.p2p.peer);
    p = JF_LIT(p, ",\"count\":");
    p = jf_u64(p, r->d.p2p.count);
    p = JF_LIT(p, ",\"datatype\":");
    p = sid(p, r->d.p2p.datatype);
    p = JF_LIT(p, ",\"channels\":");
    p = jf_u64(p, r->d.p2p.channels);
    break;
  case 8: /* ProxyOp */
    p = JF_LIT(p, "\"channelId\":");
    p = jf_u64(p, r->d.proxy_op.channel);
    p = JF_LIT(p, ",\"peer\":");
    p = jf_i64(p, r->d.proxy_op.peer);
    p = JF_LIT(p, ",\"nSteps\":");
    p = jf_i64(p, r->d.proxy_op.nsteps);
    p = JF_LIT(p, ",\"chunkSize\":");
    p = jf_i64(p, r->d.proxy_op.chunk_size);
    p = JF_LIT(p, ",\"isSend\":");
    p = jf_i64(p, r->d.proxy_op.is_send);
    break;
  case 16: /* ProxyStep */
    p = JF_LIT(p, "\"step\":");
    p = jf_i64(p, r->d.proxy_step.step);
    break;
  case 64: /* KernelCh */
    p = JF_LIT(p, "\"channelId\":");
    p = jf_u64(p, r->d.kernel_ch.channel);
    p = JF_LIT(p, ",\"gpuStart\":");
    p = jf_u64(p, r->d.kernel_ch.gpu_start);
    p = JF_LIT(p, ",\"gpuStop\":");
    p = jf_u64(p, r->d.kernel_ch.gpu_stop);
    break;
  case 128: /* NetPlugin */
    p = JF_LIT(p, "\"id\":");
    p = jf_i64(p, r->d.net_plugin.id);
    break;
  default: /* Group, ProxyCtrl: nothing more to say */
    break;
  }
  *p++ = '}';
  return p;
}

/* ,"gpuUuid":..,"commId":..,"rank":.. of the record's communicator */
static char *comm_fields(char *p, const cp_rec *r, const cp_comm *c, int pxn) {
  if (!pxn && c && r->rank == c->nccl_rank) {   /* formatted at registration */
    memcpy(p, c->json_id, c->json_id_len);
    p += c->json_id_len;
  } else {
    p = JF_LIT(p, ",\"gpuUuid\":");
    p = jf_str(p, !pxn && c ? c->gpu_uuid : "", 240);
    p = JF_LIT(p, ",\"commId\":\"");
    p = jf_u64(p, !pxn && c ? c->comm_id : 0);
    p = JF_LIT(p, "\",\"rank\":");
    p = jf_i64(p, pxn ? -1 : r->rank);
  }
  return p;
}

/* The fields event and lifecycle records share, up to "myPid". */
static char *event_head(char *p, const cp_rec *r, const char *type, uint32_t func_id, const char *func,
                        const cp_comm *c, int pxn, uint64_t stop_ns) {
  p = JF_LIT(p, "{\"recordType\":\"event\",\"type\":\"");
  size_t n = strlen(type);
  memcpy(p, type, n);
  p += n;
  p = JF_LIT(p, "\",\"func\":");
  p = func ? jf_str(p, func, STR_MAX) : sid(p, func_id);
  p = comm_fields(p, r, c, pxn);
  p = JF_LIT(p, ",\"start\":");
  p = ts_obj(p, r->start_ns, r->pid, r->start_tid);
  p = JF_LIT(p, ",\"stop\":");
  p = ts_obj(p, stop_ns, r->pid, r->stop_tid);
  p = JF_LIT(p, ",\"duration\":");
  p = jf_us3(p, stop_ns > r->start_ns ? stop_ns - r->start_ns : 0);
  p = JF_LIT(p, ",\"myPid\":");
  p = jf_i64(p, r->pid);
  return p;
}

static size_t event_line(const cp_rec *r, char *buf) {
  int pxn = r->is_pxn != 0;
  const cp_comm *c = pxn ? NULL : cp_registry_get(r->comm);
  char *p = event_head(buf, r, cp_type_name(r->type), r->func, NULL, c, pxn, r->stop_ns);
  if (pxn) {
    p = JF_LIT(p, ",\"originPid\":");
    p = jf_i64(p, r->origin_pid);
  }
  p = JF_LIT(p, ",\"parentObj\":");
  p = jf_ptr(p, r->parent_obj);
  p = JF_LIT(p, ",\"eventAddr\":");
  p = jf_ptr(p, r->event_addr);
  if (!pxn) p = ctx_field(p, r->ctx_addr);
  p = JF_LIT(p, ",\"isPxn\":");
  p = jf_bool(p, pxn);
  p = JF_LIT(p, ",\"path\":");
  p = jf_u64(p, r->path);
  *p++ = ',';
  p = details(p, r);
  p = JF_LIT(p, "}\n");
  return (size_t)(p - buf);
}

static size_t lifecycle_line(const cp_rec *r, char *buf) {
  const cp_comm *c = cp_registry_get(r->comm);
  const char *func = r->d.lifecycle.is_finalize ? "ProfilerFinalize" : "ProfilerInit";
  char *p = event_head(buf, r, "ProfilerLifecycle", 0, func, c, 0, r->start_ns);
  p = JF_LIT(p, ",\"parentObj\":null,\"eventAddr\":");
  p = jf_ptr(p, r->event_addr);
  p = JF_LIT(p, ",\"ctx\":");
  p = jf_ptr(p, r->ctx_addr ? r->ctx_addr : (c ? c->ctx_value : 0));
  p = JF_LIT(p, ",\"isPxn\":false,\"details\":{\"nranks\":");
  p = jf_i64(p, c ? c->nranks : 0);
  p = JF_LIT(p, ",\"nNodes\":");
  p = jf_i64(p, c ? c->nnodes : 0);
  p = JF_LIT(p, ",\"commName\":");
  p = jf_str(p, c ? c->comm_name : "", 400);
  p = JF_LIT(p, ",\"eventMask\":");
  p = jf_u64(p, r->d.lifecycle.event_mask);
  p = JF_LIT(p, "}}\n");
  return (size_t)(p - buf);
}

static size_t state_line(const cp_rec *r, char *buf) {
  char *p = JF_LIT(buf, "{\"recordType\":\"state\",\"eventAddr\":");
  p = jf_ptr(p, r->event_addr);
  p = JF_LIT(p, ",\"ts\":");
  p = us3(p, r->start_ns);
  p = JF_LIT(p, ",\"name\":\"");
  const char *nm = cp_state_name(r->path);
  if (nm) {
    size_t n = strlen(nm);
    memcpy(p, nm, n);
    p += n;
  } else {
    p = JF_LIT(p, "State");
    p = jf_u64(p, r->path);
  }
  p = JF_LIT(p, "\",\"id\":");
  p = jf_u64(p, r->path);
  p = pid_tid(p, r->pid, r->start_tid);
  switch (r->state_arg_kind) {
  case 1:
    p = JF_LIT(p, ",\"transSize\":");
    p = jf_u64(p, r->d.state.arg);
    break;
  case 2:
    p = JF_LIT(p, ",\"appendedProxyOps\":");
    p = jf_i64(p, (int32_t)r->d.state.arg);
    break;
  case 3:
    p = JF_LIT(p, ",\"gpuStop\":");
    p = jf_u64(p, r->d.state.arg);
    break;
  default:
    break;
  }
  p = JF_LIT(p, "}\n");
  return (size_t)(p - buf);
}

/* A timed kernel launch (launch_timer.h): its GPU time by CUDA events on
 * the launch stream, and the one Coll/P2p it ran (type, func, eventAddr,
 * path, bytes; null / absent when it ran none or several). */
static size_t launch_line(const cp_rec *r, char *buf) {
  const cp_comm *c = cp_registry_get(r->comm);
  char *p = JF_LIT(buf, "{\"recordType\":\"gpuLaunch\",\"type\":");
  if (r->type) {
    const char *tn = cp_type_name(r->type);
    size_t n = strlen(tn);
    *p++ = '"';
    memcpy(p, tn, n);
    p += n;
    *p++ = '"';
  } else {
    p = JF_LIT(p, "null");
  }
  p = JF_LIT(p, ",\"func\":");
  p = sid(p, r->func);
  p = comm_fields(p, r, c, 0);
  p = JF_LIT(p, ",\"launchAddr\":");
  p = jf_ptr(p, r->parent_obj);
  p = JF_LIT(p, ",\"eventAddr\":");
  p = jf_ptr(p, r->event_addr);
  if (r->type) {
    p = JF_LIT(p, ",\"path\":");
    p = jf_u64(p, r->path);
  }
  p = JF_LIT(p, ",\"ts\":");
  p = us3(p, r->start_ns);
  p = pid_tid(p, r->pid, r->start_tid);
  p = JF_LIT(p, ",\"bytes\":");
  p = jf_u64(p, r->d.launch.bytes);
  p = JF_LIT(p, ",\"ops\":");
  p = jf_u64(p, r->d.launch.nops);
  p = JF_LIT(p, ",\"launches\":");
  p = jf_u64(p, r->d.launch.launches);
  p = JF_LIT(p, ",\"gpuDuration\":");
  p = jf_us3(p, r->d.launch.gpu_ns);
  p = JF_LIT(p, ",\"first\":");
  p = jf_bool(p, r->d.launch.first);
  p = JF_LIT(p, ",\"split\":");
  p = jf_bool(p, r->d.launch.multi);
  p = JF_LIT(p, ",\"idle\":");
  p = jf_bool(p, r->d.launch.idle);
  p = JF_LIT(p, "}\n");
  return (size_t)(p - buf);
}

size_t cp_trace_json(const cp_rec *r, char *buf) {
  switch (r->kind) {
  case CP_REC_EVENT: return event_line(r, buf);
  case CP_REC_STATE: return state_line(r, buf);
  case CP_REC_LIFECYCLE: return lifecycle_line(r, buf);
  case CP_REC_LAUNCH: return launch_line(r, buf);
  default: {
    /* Should not happen; keep the line valid and visible. */
    char *p = JF_LIT(buf, "{\"recordType\":\"unknown\",\"kind\":");
    p = jf_u64(p, r->kind);
    p = JF_LIT(p, "}\n");
    return (size_t)(p - buf);
  }
  }
}

#pragma GCC visibility pop
