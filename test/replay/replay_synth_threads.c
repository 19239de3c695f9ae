/*
 * replay_synth_threads.c — `--synthetic threads`: T application threads,
 * each with its own communicator, hammering full event trees at once:
 * GroupApi/CollApi/KernelLaunch/Group/Coll, two KernelCh per Coll, a Send
 * and a Recv ProxyOp with two ProxySteps each (states included), the Coll
 * stopping after its children as with KernelCh on, and a ProxyCtrl every 64
 * calls.  13 events per API call.  --count N: API calls in total (default
 * 160000, about 2.1 million events); --threads T (default 8).
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include "replay_synth.h"

typedef struct { int me, nthreads; long calls; pthread_barrier_t *bar; } thr_arg;

static void *worker(void *p) {
  thr_arg *a = p;
  sy_tab *t = calloc(1, sizeof *t);
  void *ctx = NULL;
  rp_host_init(&ctx, 0x5eed1000ull + (uint64_t)a->me, "threads", 1, a->nthreads, a->me);
  pthread_barrier_wait(a->bar);   /* like an application: every comm up first */
  ncclProfilerEventDescr_v5_t d;
  pid_t pid = getpid();
  for (long i = 0; i < a->calls; i++) {
    sy_apicall c;
    sy_apicall_run(t, &c, ctx, a->me, "AllReduce", "CollApi:AllReduce", "Coll:AllReduce",
                   (uint64_t)i, 1 << 16, 2, 0, 0);
    for (int ch = 0; ch < 2; ch++) {
      sy_ev kc;
      uint64_t g0 = sy_gpu_now();
      sy_d_kernelch(&d, a->me, ch, g0);
      sy_start(t, &kc, &c.call, ctx, &c.coll, NULL, &d, "KernelCh", 0);
      sy_state(&kc, ncclProfilerKernelChStop, RP_ARG_PTIMER, g0 + 500);
      sy_stop(t, &kc);
    }
    for (int snd = 0; snd < 2; snd++) {
      sy_ev op;
      sy_d_proxyop(&d, a->me, pid, 0, (a->me + 1) % a->nthreads, 2, snd);
      sy_start(t, &op, &c.call, ctx, &c.coll, NULL, &d, snd ? "ProxyOp:Send" : "ProxyOp:Recv", 0);
      sy_state(&op, ncclProfilerProxyOpInProgress_v4, RP_ARG_NONE, 0);
      for (int s = 0; s < 2; s++) {
        sy_ev st;
        sy_d_proxystep(&d, a->me, s);
        sy_start(t, &st, &c.call, ctx, &op, NULL, &d, "ProxyStep", 0);
        sy_state(&st, snd ? ncclProfilerProxyStepSendWait : ncclProfilerProxyStepRecvWait,
                 RP_ARG_TRANS, 65536);
        sy_stop(t, &st);
      }
      sy_stop(t, &op);
    }
    sy_stop(t, &c.coll);
    if (i % 64 == 0) {
      sy_ev pc;
      sy_d_simple(&d, ncclProfileProxyCtrl, a->me);
      sy_start(t, &pc, NULL, ctx, NULL, NULL, &d, "ProxyCtrl", 0);
      sy_state(&pc, ncclProfilerProxyCtrlActive, RP_ARG_OTHER, 0);
      sy_stop(t, &pc);
    }
  }
  rp_host_fini(ctx, 1);
  sy_tab_flush(t);
  free(t);
  return NULL;
}

int rp_synth_threads(const rp_synth_opts *o) {
  int nt = o->threads > 0 ? o->threads : 8;
  long total = o->count > 0 ? o->count : 160000;
  pthread_t *th = calloc((size_t)nt, sizeof *th);
  thr_arg *args = calloc((size_t)nt, sizeof *args);
  int started = 0;
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, (unsigned)nt);
  for (int i = 0; i < nt; i++) {
    args[i].me = i;
    args[i].nthreads = nt;
    args[i].calls = total / nt + (i < total % nt);
    args[i].bar = &bar;
    if (pthread_create(&th[i], NULL, worker, &args[i]) != 0) {
      rp_log("pthread_create failed");   /* the barrier would never open */
      exit(1);
    }
    started++;
  }
  for (int i = 0; i < started; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&bar);
  free(th);
  free(args);
  return started;
}
