/*
 * replay_engine.c — replays a parsed capture through the plugin.
 *
 * One thread per recorded tid, so the plugin sees the same thread structure
 * NCCL gave it (application threads, proxy threads, a finalizing thread).
 * A sequencer keeps file order across them: line i runs on its own thread
 * only after line i-1 completed (a release store of the next line number,
 * and a semaphore post to the owner of that line when it is another thread).
 *
 * The activation mask is emulated live, the way NCCL uses it: the mask is
 * read at each API call's first event (v5: GroupApi; v4: Group) and every
 * event of that call (parse-time `root`) is emitted or not by NCCL's rules
 * for that value; events outside any call (ProxyCtrl) use the mask at their
 * own start.  A dropped event gets no callback, neither do its states and
 * stop; a kept child of a dropped parent gets parentObj NULL.  Except, as
 * NCCL 2.28 does: a dropped CollApi's or P2pApi's stop goes to the handle
 * the plugin gave that thread's last kept one of that type, which NCCL
 * keeps in thread-local state and stops again at every such call
 * (ncclProfilerStopCollApiEvent tests the handle, not the mask).
 */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "replay.h"

typedef struct rp_run {
  rp_capture *c;
  int api, timed;
  size_t seq;            /* next line to run (atomic) */
  sem_t *sems;           /* one per thread */
  size_t **mine;         /* per thread: its line numbers */
  size_t *nmine;
  uint64_t *offset_ns;   /* timed: when line i is due, from replay start */
  uint64_t start_ns;
  pid_t mypid;
  void *(*last_api)[2];  /* per thread: the handles NCCL keeps for CollApi [0] and P2pApi [1] */
} rp_run;

typedef struct { rp_run *r; int me; } rp_thr_arg;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *handle_of(rp_capture *c, int32_t ev, uint64_t raw) {
  if (ev < 0) return (void *)(uintptr_t)raw;          /* never recorded: foreign */
  rp_event *p = &c->events[ev];
  return p->kept ? p->handle : NULL;                  /* dropped by mask: NULL */
}

static void run_start(rp_run *r, int32_t ev) {
  rp_capture *c = r->c;
  rp_event *e = &c->events[ev];
  uint64_t t = e->d.type;
  if (r->api == 4 && rp_is_api_type(t)) { e->decided = 1; e->kept = 0; return; }
  int m;
  if (e->root == ev) m = e->mask = rp_mask_read();
  else if (e->root >= 0 && c->events[e->root].decided) m = c->events[e->root].mask;
  else m = rp_mask_read();
  e->decided = 1;
  if (!rp_rule_keep(t, m)) { e->kept = 0; rp_count_dropped(1); return; }
  e->kept = 1;
  ncclProfilerEventDescr_v5_t d = e->d;
  int collp2p = t == ncclProfileColl || t == ncclProfileP2p;
  if (r->api == 4 && collp2p) d.parentObj = handle_of(c, e->pgroup, e->raw_pgroup);
  else d.parentObj = handle_of(c, e->parent, e->raw_parent);
  if (t == ncclProfileColl) d.coll.parentGroup = handle_of(c, e->pgroup, e->raw_pgroup);
  if (t == ncclProfileP2p) d.p2p.parentGroup = handle_of(c, e->pgroup, e->raw_pgroup);
  if (t == ncclProfileProxyOp && e->pid_local) d.proxyOp.pid = r->mypid;
  void *ctx = e->comm >= 0 ? c->comms[e->comm].ctx : (void *)(uintptr_t)e->raw_ctx;
  rp_host_start(ctx, &e->handle, &d);
}

static void run_line(rp_run *r, size_t i) {
  rp_capture *c = r->c;
  rp_line *l = &c->lines[i];
  switch (l->cb) {
  case RP_INIT: {
    rp_comm *cm = &c->comms[l->ref];
    void *ctx = NULL;
    ncclResult_t rc = rp_host_init(&ctx, cm->comm_id, cm->name, cm->nnodes, cm->nranks, cm->rank);
    cm->ok = rc == NCCL_OK;
    cm->ctx = cm->ok ? ctx : NULL;   /* NCCL goes on with a NULL context */
    if (!cm->ok) rp_log("plugin init returned %d; going on with a NULL context", rc);
    break;
  }
  case RP_FINI:
    if (l->ref >= 0) rp_host_fini(c->comms[l->ref].ctx, 1);
    else rp_host_fini((void *)(uintptr_t)l->raw, 0);
    break;
  case RP_START: {
    run_start(r, l->ref);
    const rp_event *e = &c->events[l->ref];
    const uint64_t t = e->d.type;
    if (e->kept && (t == ncclProfileCollApi || t == ncclProfileP2pApi))
      r->last_api[l->thr][t == ncclProfileP2pApi] = e->handle;
    break;
  }
  case RP_STOP:
  case RP_STATE: {
    void *h;
    if (l->ref >= 0) {
      rp_event *e = &c->events[l->ref];
      const uint64_t t = e->d.type;
      if (!e->kept && l->cb == RP_STOP && (t == ncclProfileCollApi || t == ncclProfileP2pApi)) {
        h = r->last_api[l->thr][t == ncclProfileP2pApi];   /* NCCL's stale thread-local handle */
        if (h) {
          rp_count_stale_api_stop();
          rp_host_stop(h);
        }
        break;
      }
      if (!e->kept || !e->handle) break;   /* NCCL only calls back with a handle */
      h = e->handle;
    } else {
      h = (void *)(uintptr_t)l->raw;
    }
    if (l->cb == RP_STOP) { rp_host_stop(h); break; }
    ncclProfilerEventStateArgs_v5_t a;
    memset(&a, 0, sizeof a);
    switch (l->argkind) {
    case RP_ARG_TRANS: a.transSize = (size_t)l->arg; break;
    case RP_ARG_APPENDED: a.appendedProxyOps = (int)l->arg; break;
    case RP_ARG_PTIMER: a.pTimer = l->arg; break;
    default: break;
    }
    rp_host_state(h, l->state, l->argkind == RP_ARG_NONE ? NULL : &a);
    break;
  }
  default: break;
  }
}

static void *thread_main(void *p) {
  rp_thr_arg *a = p;
  rp_run *r = a->r;
  int me = a->me;
  size_t n = r->c->nlines;
  for (size_t k = 0; k < r->nmine[me]; k++) {
    size_t i = r->mine[me][k];
    while (__atomic_load_n(&r->seq, __ATOMIC_ACQUIRE) != i)
      while (sem_wait(&r->sems[me]) != 0 && errno == EINTR) {}
    if (r->timed) {
      uint64_t due = r->start_ns + r->offset_ns[i];
      struct timespec ts = { (time_t)(due / 1000000000ull), (long)(due % 1000000000ull) };
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
    }
    run_line(r, i);
    __atomic_store_n(&r->seq, i + 1, __ATOMIC_RELEASE);
    if (i + 1 < n && r->c->lines[i + 1].thr != me) sem_post(&r->sems[r->c->lines[i + 1].thr]);
  }
  return NULL;
}

int rp_replay(rp_capture *c, int api, int timed) {
  rp_capture_roots(c, api);
  rp_run r;
  memset(&r, 0, sizeof r);
  r.c = c; r.api = api; r.timed = timed; r.mypid = getpid();
  int nt = c->nthreads;
  r.sems = calloc((size_t)nt, sizeof *r.sems);
  r.mine = calloc((size_t)nt, sizeof *r.mine);
  r.nmine = calloc((size_t)nt, sizeof *r.nmine);
  r.last_api = calloc((size_t)nt, sizeof *r.last_api);
  for (size_t i = 0; i < c->nlines; i++) r.nmine[c->lines[i].thr]++;
  for (int t = 0; t < nt; t++) {
    r.mine[t] = malloc((r.nmine[t] ? r.nmine[t] : 1) * sizeof **r.mine);
    r.nmine[t] = 0;
    sem_init(&r.sems[t], 0, 0);
  }
  for (size_t i = 0; i < c->nlines; i++) {
    int t = c->lines[i].thr;
    r.mine[t][r.nmine[t]++] = i;
  }
  if (timed) {
    r.offset_ns = calloc(c->nlines, sizeof *r.offset_ns);
    for (size_t i = 1; i < c->nlines; i++) {
      uint64_t gap = c->lines[i].t > c->lines[i - 1].t ? c->lines[i].t - c->lines[i - 1].t : 0;
      r.offset_ns[i] = r.offset_ns[i - 1] + gap;   /* gaps clamped at 0 */
    }
  }
  r.start_ns = now_ns();
  pthread_t *th = calloc((size_t)nt, sizeof *th);
  rp_thr_arg *args = calloc((size_t)nt, sizeof *args);
  int started = 0;
  for (int t = 0; t < nt; t++) {
    args[t].r = &r; args[t].me = t;
    if (pthread_create(&th[t], NULL, thread_main, &args[t]) != 0) {
      /* the started threads would wait forever for this one's lines */
      rp_log("pthread_create failed for recorded thread %ld", c->tids[t]);
      exit(1);
    }
    started++;
  }
  for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
  for (int t = 0; t < nt; t++) { sem_destroy(&r.sems[t]); free(r.mine[t]); }
  free(r.sems); free(r.mine); free(r.nmine); free(r.last_api); free(r.offset_ns); free(th); free(args);
  return started == nt ? nt : -1;
}
