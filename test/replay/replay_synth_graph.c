/*
 * replay_synth_graph.c — `--synthetic graph`: CUDA-graph replays.
 *
 * One AllReduce is captured (GroupApi + CollApi, graphCaptured 1) and its
 * handles stop.  Then a "host-callback" thread replays the graph N times:
 * each replay starts a Coll whose parentObj is that capture-time CollApi
 * handle, with a KernelCh child, while the application thread keeps the
 * same communicator busy with other API calls (Broadcast) that churn the
 * plugin's pool.  Every replayed Coll belongs on
 * GroupApi/CollApi:AllReduce/Coll:AllReduce, never on a path of whatever
 * took the CollApi's slot.  --count N: graph replays (default 5000).
 */
#include <pthread.h>
#include <string.h>
#include "replay_synth.h"

typedef struct {
  void *ctx;
  long n;
  sy_call call;        /* the capture's mask: replays keep it */
  sy_ev collapi;
  sy_tab tab;
  int done;            /* atomic */
} graph_ctl;

static void *replayer(void *p) {
  graph_ctl *g = p;
  ncclProfilerEventDescr_v5_t d;
  for (long i = 0; i < g->n; i++) {
    sy_ev coll, kc;
    sy_d_coll(&d, 0, "AllReduce", (uint64_t)i, 1 << 20, 1);
    sy_start(&g->tab, &coll, &g->call, g->ctx, &g->collapi, NULL, &d, "Coll:AllReduce", 0);
    uint64_t g0 = sy_gpu_now();
    sy_d_kernelch(&d, 0, 0, g0);
    sy_start(&g->tab, &kc, &g->call, g->ctx, &coll, NULL, &d, "KernelCh", 0);
    sy_state(&kc, ncclProfilerKernelChStop, RP_ARG_PTIMER, g0 + 2000);
    sy_stop(&g->tab, &kc);
    sy_stop(&g->tab, &coll);
  }
  __atomic_store_n(&g->done, 1, __ATOMIC_RELEASE);
  return NULL;
}

int rp_synth_graph(const rp_synth_opts *o) {
  graph_ctl g;
  memset(&g, 0, sizeof g);
  g.n = o->count > 0 ? o->count : 5000;
  rp_host_init(&g.ctx, 0x5eed0002ull, "graph", 1, 2, 0);
  sy_tab app = {0};
  ncclProfilerEventDescr_v5_t d;
  /* Capture: the API call runs once; its Coll only exists at replay. */
  sy_ev ga;
  sy_call_begin(&g.call);
  sy_d_groupapi(&d, 0, 1);
  sy_start(&app, &ga, &g.call, g.ctx, NULL, NULL, &d, "GroupApi", 0);
  sy_d_collapi(&d, 0, "AllReduce", 1 << 20, 1);
  sy_start(&app, &g.collapi, &g.call, g.ctx, &ga, NULL, &d, "CollApi:AllReduce", 0);
  sy_stop(&app, &g.collapi);
  sy_stop(&app, &ga);
  g.tab = app;            /* the replayer resolves paths under the CollApi's id */
  for (int i = 0; i < g.tab.n; i++) g.tab.count[i] = g.tab.states[i] = 0;
  pthread_t th;
  int threads = 1;
  if (pthread_create(&th, NULL, replayer, &g) != 0) { replayer(&g); }
  else threads = 2;
  /* Churn on the application thread meanwhile, at most 4 calls per replay:
   * on a loaded machine the replayer may get little CPU, and churning for
   * as long as it runs (27,000 calls for 3,000 replays on one shared core)
   * could fill the application thread's trace ring, whose dropped records
   * replay_synthetic.t would read as paths without event records (the
   * likely cause of one failure in CI). */
  long j = 0;
  const long churn_max = 4 * g.n + 100;
  do {
    sy_apicall c;
    sy_apicall_run(&app, &c, g.ctx, 0, "Broadcast", "CollApi:Broadcast", "Coll:Broadcast",
                   (uint64_t)j, 4096, 1, 0, 1);
    j++;
  } while ((!__atomic_load_n(&g.done, __ATOMIC_ACQUIRE) || j < 100) && j < churn_max);
  if (threads == 2) pthread_join(th, NULL);
  rp_host_fini(g.ctx, 1);
  sy_tab_flush(&app);
  sy_tab_flush(&g.tab);
  return threads;
}
