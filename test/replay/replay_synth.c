/*
 * replay_synth.c — shared machinery of the synthetic streams (replay_synth.h)
 * and the --synthetic dispatcher.  The streams themselves live in
 * replay_synth_<name>.c.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "replay_synth.h"

int rp_synth_run(const rp_synth_opts *o) {
  int r;
  (void)rp_host_probe_api();     /* load now: generators need the api */
  if (!strcmp(o->name, "reuse")) r = rp_synth_reuse(o);
  else if (!strcmp(o->name, "graph")) r = rp_synth_graph(o);
  else if (!strcmp(o->name, "pxn")) r = rp_synth_pxn(o);
  else if (!strcmp(o->name, "threads")) r = rp_synth_threads(o);
  else if (!strcmp(o->name, "badinput")) r = rp_synth_badinput(o);
  else if (!strcmp(o->name, "fuzz")) r = rp_synth_fuzz(o);
  else return -1;
  if (o->expect && rp_expect_write(o->expect) != 0) rp_log("could not write %s", o->expect);
  return r;
}

static int sy_path(sy_tab *t, int parent, const char *elem) {
  for (int i = 0; i < t->n; i++)
    if (t->elem[i] == elem && t->parent[i] == parent) return i;
  if (t->n == SY_MAXPATH) { rp_log("synthetic path table full"); return t->n - 1; }
  t->parent[t->n] = parent;
  t->elem[t->n] = elem;
  t->count[t->n] = 0;
  t->states[t->n] = 0;
  return t->n++;
}

void sy_start(sy_tab *t, sy_ev *e, const sy_call *call, void *ctx,
              const sy_ev *parent, const sy_ev *group,
              ncclProfilerEventDescr_v5_t *d, const char *elem, int foreign) {
  uint64_t type = d->type;
  int api = rp_host_api();
  e->h = NULL; e->kept = 0; e->path = -1; e->tab = t;
  if (api == 4 && rp_is_api_type(type)) return;          /* v4 has no API events */
  int m = call ? call->m : rp_mask_read();
  if (!rp_rule_keep(type, m)) { rp_count_dropped(1); return; }
  int collp2p = type == ncclProfileColl || type == ncclProfileP2p;
  const sy_ev *par = api == 4 && collp2p ? group : parent;
  int ppath;
  if (par) {
    d->parentObj = par->kept ? par->h : NULL;
    ppath = par->kept && par->h ? par->path : SY_ROOT;
  } else {
    ppath = foreign && d->parentObj ? SY_FOREIGN : SY_ROOT;
  }
  if (type == ncclProfileColl) d->coll.parentGroup = group && group->kept ? group->h : NULL;
  if (type == ncclProfileP2p) d->p2p.parentGroup = group && group->kept ? group->h : NULL;
  e->path = sy_path(t, ppath, elem);
  e->kept = 1;
  rp_host_start(ctx, &e->h, d);
}

void sy_stop(sy_tab *t, sy_ev *e) {
  if (!e->kept || !e->h) return;    /* NCCL only calls back with a handle */
  rp_host_stop(e->h);
  if (e->path >= 0) t->count[e->path]++;
}

void sy_state(sy_ev *e, int state, int argkind, uint64_t arg) {
  if (!e->kept || !e->h) return;
  ncclProfilerEventStateArgs_v5_t a;
  memset(&a, 0, sizeof a);
  if (argkind == RP_ARG_TRANS) a.transSize = (size_t)arg;
  else if (argkind == RP_ARG_APPENDED) a.appendedProxyOps = (int)arg;
  else if (argkind == RP_ARG_PTIMER) a.pTimer = arg;
  rp_host_state(e->h, state, argkind == RP_ARG_NONE ? NULL : &a);
  if (e->path >= 0) e->tab->states[e->path]++;
}

size_t sy_tab_render(const sy_tab *t, int id, char *buf, size_t cap) {
  size_t n = 0;
  if (t->parent[id] == SY_FOREIGN) n = (size_t)snprintf(buf, cap, "@PXN/");
  else if (t->parent[id] >= 0) {
    n = sy_tab_render(t, t->parent[id], buf, cap);
    if (n + 1 < cap) buf[n++] = '/';
  }
  if (n < cap) n += (size_t)snprintf(buf + n, cap - n, "%s", t->elem[id]);
  return n < cap ? n : cap - 1;
}

void sy_tab_flush(sy_tab *t) {
  char buf[1024];
  for (int i = 0; i < t->n; i++) {
    if (!t->count[i] && !t->states[i]) continue;
    sy_tab_render(t, i, buf, sizeof buf);
    rp_expect_add(buf, t->count[i], t->states[i]);
    t->count[i] = 0;
    t->states[i] = 0;
  }
}

void sy_d_simple(ncclProfilerEventDescr_v5_t *d, uint64_t type, int rank) {
  memset(d, 0, sizeof *d);
  d->type = type;
  d->rank = rank;
}

void sy_d_groupapi(ncclProfilerEventDescr_v5_t *d, int rank, int graph) {
  sy_d_simple(d, ncclProfileGroupApi, rank);
  d->groupApi.graphCaptured = graph != 0;
  d->groupApi.groupDepth = 1;
}

void sy_d_collapi(ncclProfilerEventDescr_v5_t *d, int rank, const char *func, size_t count, int graph) {
  sy_d_simple(d, ncclProfileCollApi, rank);
  d->collApi.func = func;
  d->collApi.count = count;
  d->collApi.datatype = "ncclFloat32";
  d->collApi.stream = (void *)(uintptr_t)0x5500c0ffee00ull;
  d->collApi.graphCaptured = graph != 0;
}

void sy_d_coll(ncclProfilerEventDescr_v5_t *d, int rank, const char *func, uint64_t seq,
               size_t count, int nch) {
  sy_d_simple(d, ncclProfileColl, rank);
  d->coll.seqNumber = seq;
  d->coll.func = func;
  d->coll.sendBuff = (void *)(uintptr_t)0x7f0000000000ull;
  d->coll.recvBuff = (void *)(uintptr_t)0x7f0000400000ull;
  d->coll.count = count;
  d->coll.datatype = "ncclFloat32";
  d->coll.nChannels = (uint8_t)nch;
  d->coll.nWarps = 8;
  d->coll.algo = "RING";
  d->coll.proto = "LL";
}

void sy_d_proxyop(ncclProfilerEventDescr_v5_t *d, int rank, int pid, int ch, int peer,
                  int nsteps, int is_send) {
  sy_d_simple(d, ncclProfileProxyOp, rank);
  d->proxyOp.pid = pid;
  d->proxyOp.channelId = (uint8_t)ch;
  d->proxyOp.peer = peer;
  d->proxyOp.nSteps = nsteps;
  d->proxyOp.chunkSize = 131072;
  d->proxyOp.isSend = is_send;
}

void sy_d_proxystep(ncclProfilerEventDescr_v5_t *d, int rank, int step) {
  sy_d_simple(d, ncclProfileProxyStep, rank);
  d->proxyStep.step = step;
}

void sy_d_kernelch(ncclProfilerEventDescr_v5_t *d, int rank, int ch, uint64_t ptimer) {
  sy_d_simple(d, ncclProfileKernelCh, rank);
  d->kernelCh.channelId = (uint8_t)ch;
  d->kernelCh.pTimer = ptimer;
}

void sy_apicall_run(sy_tab *t, sy_apicall *a, void *ctx, int rank, const char *func,
                    const char *collapi_elem, const char *coll_elem, uint64_t seq,
                    size_t count, int nch, int graph, int stop_coll) {
  ncclProfilerEventDescr_v5_t d;
  sy_call_begin(&a->call);
  sy_d_groupapi(&d, rank, graph);
  sy_start(t, &a->ga, &a->call, ctx, NULL, NULL, &d, "GroupApi", 0);
  sy_state(&a->ga, ncclProfilerGroupStartApiStop, RP_ARG_NONE, 0);
  sy_d_collapi(&d, rank, func, count, graph);
  sy_start(t, &a->ca, &a->call, ctx, &a->ga, NULL, &d, collapi_elem, 0);
  sy_stop(t, &a->ca);
  sy_state(&a->ga, ncclProfilerGroupEndApiStart, RP_ARG_NONE, 0);
  sy_d_simple(&d, ncclProfileKernelLaunch, rank);
  d.kernelLaunch.stream = (void *)(uintptr_t)0x5500c0ffee00ull;
  sy_start(t, &a->kl, &a->call, ctx, &a->ga, NULL, &d, "KernelLaunch", 0);
  sy_stop(t, &a->kl);
  sy_d_simple(&d, ncclProfileGroup, rank);
  sy_start(t, &a->g, &a->call, ctx, NULL, NULL, &d, "Group", 0);
  sy_d_coll(&d, rank, func, seq, count, nch);
  sy_start(t, &a->coll, &a->call, ctx, &a->ca, &a->g, &d, coll_elem, 0);
  if (stop_coll) sy_stop(t, &a->coll);
  sy_stop(t, &a->g);
  sy_stop(t, &a->ga);
}

uint64_t sy_gpu_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return 1795221218000000000ull + (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
