/*
 * replay_parse.c — reads one capture (shared/fixtures/README.md format) into
 * lines and events for the engine.
 *
 * Everything that links records is resolved here, by index, so the engine
 * does no lookups: a stop/state names the event whose start recorded that
 * handle; a parent names the event that started with that handle (even if it
 * stopped long before: the address-reuse situation); a context names the
 * init that returned it.  Values that were never recorded stay raw and are
 * passed through as foreign pointers.  Strings are interned so they live
 * until the process ends and one text has one pointer, as NCCL's do.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "replay.h"

/* ---- interned strings ---- */
static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static const char **intern_tab;
static size_t intern_n, intern_cap;

const char *rp_intern(const char *s) {
  if (!s) return NULL;
  pthread_mutex_lock(&intern_lock);
  for (size_t i = 0; i < intern_n; i++)
    if (!strcmp(intern_tab[i], s)) { pthread_mutex_unlock(&intern_lock); return intern_tab[i]; }
  if (intern_n == intern_cap) {
    intern_cap = intern_cap ? 2 * intern_cap : 64;
    intern_tab = realloc(intern_tab, intern_cap * sizeof *intern_tab);
  }
  const char *r = intern_tab[intern_n++] = strdup(s);
  pthread_mutex_unlock(&intern_lock);
  return r;
}

/* ---- recorded value -> index map (open addressing) ---- */
typedef struct { uint64_t *k; int32_t *v; size_t cap, n; } pmap;

static void pmap_put(pmap *m, uint64_t k, int32_t v);
static void pmap_grow(pmap *m) {
  pmap o = *m;
  m->cap = o.cap ? 2 * o.cap : 4096;
  m->k = calloc(m->cap, sizeof *m->k);
  m->v = calloc(m->cap, sizeof *m->v);
  m->n = 0;
  for (size_t i = 0; i < o.cap; i++) if (o.k[i]) pmap_put(m, o.k[i], o.v[i]);
  free(o.k); free(o.v);
}
static void pmap_put(pmap *m, uint64_t k, int32_t v) {
  if (!k) return;
  if (2 * (m->n + 1) > m->cap) pmap_grow(m);
  size_t i = (k * 0x9E3779B97F4A7C15ULL >> 20) & (m->cap - 1);
  while (m->k[i] && m->k[i] != k) i = (i + 1) & (m->cap - 1);
  if (!m->k[i]) m->n++;
  m->k[i] = k; m->v[i] = v;   /* latest start with this value wins */
}
static int32_t pmap_get(const pmap *m, uint64_t k) {
  if (!k || !m->cap) return -1;
  size_t i = (k * 0x9E3779B97F4A7C15ULL >> 20) & (m->cap - 1);
  while (m->k[i]) { if (m->k[i] == k) return m->v[i]; i = (i + 1) & (m->cap - 1); }
  return -1;
}

/* ---- field access ---- */
static uint64_t j_ptr(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  if (!json_is_string(v)) return 0;
  const char *s = json_string_value(v);
  if (!strcmp(s, "(nil)")) return 0;
  return strtoull(s, NULL, 16);
}
static long long j_int(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  if (json_is_integer(v)) return json_integer_value(v);
  if (json_is_real(v)) {   /* a line read with JSON_DECODE_INT_AS_REAL (below) */
    const double d = json_real_value(v);
    if (!(d > -9.2e18)) return 0;
    return d < 9.2e18 ? (long long)d : d < 1.8e19 ? (long long)(uint64_t)d : -1;
  }
  return 0;
}
static const char *j_str(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_string(v) ? rp_intern(json_string_value(v)) : NULL;
}

#define GROW(arr, n, cap) do { if ((n) == (cap)) { (cap) = (cap) ? 2 * (cap) : 1024; \
  (arr) = realloc((arr), (cap) * sizeof *(arr)); } } while (0)

static int32_t thread_index(rp_capture *c, long tid, size_t *cap) {
  for (int i = 0; i < c->nthreads; i++) if (c->tids[i] == tid) return i;
  GROW(c->tids, (size_t)c->nthreads, *cap);
  c->tids[c->nthreads] = tid;
  return c->nthreads++;
}

static void fill_descr(rp_event *e, json_t *o, uint64_t type) {
  ncclProfilerEventDescr_v5_t *d = &e->d;
  d->type = type;
  d->rank = (int)j_int(o, "rank");
  switch (type) {
  case ncclProfileGroupApi:
    d->groupApi.graphCaptured = j_int(o, "graphCaptured") != 0;
    d->groupApi.groupDepth = (int)j_int(o, "groupDepth");
    break;
  case ncclProfileCollApi:
    d->collApi.func = j_str(o, "func"); d->collApi.count = (size_t)j_int(o, "count");
    d->collApi.datatype = j_str(o, "datatype"); d->collApi.root = (int)j_int(o, "root");
    d->collApi.stream = (void *)(uintptr_t)j_ptr(o, "stream");
    d->collApi.graphCaptured = j_int(o, "graphCaptured") != 0;
    break;
  case ncclProfileP2pApi:
    d->p2pApi.func = j_str(o, "func"); d->p2pApi.count = (size_t)j_int(o, "count");
    d->p2pApi.datatype = j_str(o, "datatype");
    d->p2pApi.stream = (void *)(uintptr_t)j_ptr(o, "stream");
    d->p2pApi.graphCaptured = j_int(o, "graphCaptured") != 0;
    break;
  case ncclProfileKernelLaunch:
    d->kernelLaunch.stream = (void *)(uintptr_t)j_ptr(o, "stream");
    break;
  case ncclProfileColl:
    d->coll.seqNumber = (uint64_t)j_int(o, "seq"); d->coll.func = j_str(o, "func");
    d->coll.sendBuff = (void *)(uintptr_t)j_ptr(o, "sendBuff");
    d->coll.recvBuff = (void *)(uintptr_t)j_ptr(o, "recvBuff");
    d->coll.count = (size_t)j_int(o, "count"); d->coll.root = (int)j_int(o, "root");
    d->coll.datatype = j_str(o, "datatype");
    d->coll.nChannels = (uint8_t)j_int(o, "nChannels"); d->coll.nWarps = (uint8_t)j_int(o, "nWarps");
    d->coll.algo = j_str(o, "algo"); d->coll.proto = j_str(o, "proto");
    break;
  case ncclProfileP2p:
    d->p2p.func = j_str(o, "func"); d->p2p.buff = (void *)(uintptr_t)j_ptr(o, "buff");
    d->p2p.datatype = j_str(o, "datatype"); d->p2p.count = (size_t)j_int(o, "count");
    d->p2p.peer = (int)j_int(o, "peer"); d->p2p.nChannels = (uint8_t)j_int(o, "nChannels");
    break;
  case ncclProfileProxyOp:
    d->proxyOp.pid = (pid_t)j_int(o, "opPid");
    d->proxyOp.channelId = (uint8_t)j_int(o, "channelId"); d->proxyOp.peer = (int)j_int(o, "peer");
    d->proxyOp.nSteps = (int)j_int(o, "nSteps"); d->proxyOp.chunkSize = (int)j_int(o, "chunkSize");
    d->proxyOp.isSend = (int)j_int(o, "isSend");
    break;
  case ncclProfileProxyStep: d->proxyStep.step = (int)j_int(o, "step"); break;
  case ncclProfileKernelCh:
    d->kernelCh.channelId = (uint8_t)j_int(o, "channelId");
    d->kernelCh.pTimer = (uint64_t)j_int(o, "pTimer");
    break;
  case ncclProfileNetPlugin:
    d->netPlugin.id = j_int(o, "id");
    d->netPlugin.data = (void *)(uintptr_t)j_ptr(o, "data");
    break;
  default: break;
  }
}

int rp_capture_read(const char *path, rp_capture *c) {
  memset(c, 0, sizeof *c);
  FILE *f = fopen(path, "r");
  if (!f) { rp_log("cannot open %s", path); return -1; }
  size_t lcap = 0, ecap = 0, ccap = 0, tcap = 0;
  pmap handles = {0}, ctxs = {0};
  char *buf = NULL;
  size_t bufcap = 0;
  ssize_t len;
  long lineno = 0;
  int err = 0;
  c->file_mask = -1;
  while ((len = getline(&buf, &bufcap, f)) > 0) {
    lineno++;
    json_error_t je;
    json_t *o = json_loadb(buf, (size_t)len, 0, &je);
    /* an unsigned value past 2^63 (a Coll's seq, a transSize): the line's
     * integers as reals (rankfile_read.c does the same) */
    if (!o && strstr(je.text, "too big integer")) o = json_loadb(buf, (size_t)len, JSON_DECODE_INT_AS_REAL, &je);
    if (!o) { rp_log("%s:%ld: %s", path, lineno, je.text); err = 1; break; }
    const char *cb = json_string_value(json_object_get(o, "cb"));
    GROW(c->lines, c->nlines, lcap);
    rp_line *l = &c->lines[c->nlines];
    memset(l, 0, sizeof *l);
    l->t = (uint64_t)j_int(o, "t");
    l->thr = thread_index(c, (long)j_int(o, "tid"), &tcap);
    l->ref = -1;
    if (cb && !strcmp(cb, "init")) {
      GROW(c->comms, c->ncomms, ccap);
      rp_comm *cm = &c->comms[c->ncomms];
      memset(cm, 0, sizeof *cm);
      const char *id = json_string_value(json_object_get(o, "commId"));
      cm->comm_id = id ? strtoull(id, NULL, 10) : (uint64_t)j_int(o, "commId");
      cm->name = j_str(o, "commName");
      if (!cm->name) cm->name = rp_intern("");
      cm->nnodes = (int)j_int(o, "nNodes"); cm->nranks = (int)j_int(o, "nranks");
      cm->rank = (int)j_int(o, "rank");
      cm->raw_ctx = j_ptr(o, "ctx");
      if (!c->file_pid) c->file_pid = (int)j_int(o, "pid");
      if (c->file_mask < 0) c->file_mask = (int)j_int(o, "mask");
      pmap_put(&ctxs, cm->raw_ctx, (int32_t)c->ncomms);
      l->cb = RP_INIT; l->ref = (int32_t)c->ncomms++;
    } else if (cb && !strcmp(cb, "fini")) {
      l->cb = RP_FINI; l->raw = j_ptr(o, "ctx"); l->ref = pmap_get(&ctxs, l->raw);
    } else if (cb && !strcmp(cb, "start")) {
      GROW(c->events, c->nevents, ecap);
      rp_event *e = &c->events[c->nevents];
      memset(e, 0, sizeof *e);
      uint64_t type = (uint64_t)j_int(o, "type");
      fill_descr(e, o, type);
      e->raw_ctx = j_ptr(o, "ctx");
      e->comm = pmap_get(&ctxs, e->raw_ctx);
      e->raw_parent = j_ptr(o, "parent");
      e->parent = pmap_get(&handles, e->raw_parent);
      e->pgroup = -1;
      if (type == ncclProfileColl || type == ncclProfileP2p) {
        e->raw_pgroup = j_ptr(o, "parentGroup");
        e->pgroup = pmap_get(&handles, e->raw_pgroup);
      }
      if (type == ncclProfileProxyOp)
        e->pid_local = c->file_pid && e->d.proxyOp.pid == c->file_pid;
      e->root = -1;
      e->thr = l->thr;
      pmap_put(&handles, j_ptr(o, "h"), (int32_t)c->nevents);
      l->cb = RP_START; l->ref = (int32_t)c->nevents++;
    } else if (cb && (!strcmp(cb, "stop") || !strcmp(cb, "state"))) {
      l->raw = j_ptr(o, "h");
      l->ref = pmap_get(&handles, l->raw);
      if (cb[1] == 't' && cb[2] == 'o') {
        l->cb = RP_STOP;
      } else {
        l->cb = RP_STATE;
        l->state = (int)j_int(o, "state");
        if (json_object_get(o, "transSize")) { l->argkind = RP_ARG_TRANS; l->arg = (uint64_t)j_int(o, "transSize"); }
        else if (json_object_get(o, "appendedProxyOps")) { l->argkind = RP_ARG_APPENDED; l->arg = (uint64_t)j_int(o, "appendedProxyOps"); }
        else if (json_object_get(o, "pTimer")) { l->argkind = RP_ARG_PTIMER; l->arg = (uint64_t)j_int(o, "pTimer"); }
        else if (json_object_get(o, "args")) l->argkind = RP_ARG_OTHER;
      }
    } else {
      rp_log("%s:%ld: unknown callback \"%s\", skipped", path, lineno, cb ? cb : "?");
      json_decref(o);
      continue;
    }
    c->nlines++;
    json_decref(o);
  }
  free(buf);
  free(handles.k); free(handles.v); free(ctxs.k); free(ctxs.v);
  fclose(f);
  if (c->file_mask < 0) c->file_mask = NCCL_PROFILE_ALL_EVENTS;
  if (!err && !c->nlines) { rp_log("%s: empty capture", path); err = 1; }
  return err ? -1 : 0;
}

/* The API call an event belongs to: NCCL reads the mask once per API call
 * (v5: at the GroupApi start; v4, which has no API events: at the Group
 * start) and every event of that call is emitted by that mask. */
void rp_capture_free(rp_capture *c) {
  free(c->lines);
  free(c->events);
  free(c->comms);
  free(c->tids);
  memset(c, 0, sizeof *c);
}

void rp_capture_roots(rp_capture *c, int api) {
  int32_t *last_groupapi = malloc((size_t)(c->nthreads ? c->nthreads : 1) * sizeof *last_groupapi);
  for (int i = 0; i < c->nthreads; i++) last_groupapi[i] = -1;
  for (size_t i = 0; i < c->nevents; i++) {
    rp_event *e = &c->events[i];
    uint64_t t = e->d.type;
    e->root = -1;
    if (api == 4) {
      if (t == ncclProfileGroup) e->root = (int32_t)i;
      else if ((t == ncclProfileColl || t == ncclProfileP2p) && e->pgroup >= 0)
        e->root = c->events[e->pgroup].root;
      else if (e->parent >= 0) e->root = c->events[e->parent].root;
      continue;
    }
    if (t == ncclProfileGroupApi) { e->root = (int32_t)i; last_groupapi[e->thr] = (int32_t)i; }
    else if (t == ncclProfileGroup) e->root = last_groupapi[e->thr];  /* refined below */
    else if (e->parent >= 0) e->root = c->events[e->parent].root;
    if ((t == ncclProfileColl || t == ncclProfileP2p) && e->pgroup >= 0 && e->root >= 0)
      c->events[e->pgroup].root = e->root;   /* the Group started during this call */
  }
  free(last_groupapi);
}
