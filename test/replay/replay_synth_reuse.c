/*
 * replay_synth_reuse.c — `--synthetic reuse`: parents whose slot is wanted
 * again while a child still names them (the address-reuse situation).
 *
 * Each round: an AllReduce API call whose Coll has one ProxyOp started while
 * the Coll is live; the Coll stops; thousands of other events (AllGather API
 * calls, ProxyCtrl) churn the plugin's pool; then KernelCh children and more
 * ProxyOps name the old Coll handle, and the first ProxyOp stops.  Every
 * late child must land on .../Coll:AllReduce/..., never on the path of
 * whatever took the slot since.  --count N: rounds (default 8).
 */
#include <unistd.h>
#include "replay_synth.h"

#define CHURN_CALLS 800   /* x5 events, plus ProxyCtrl: ~4400 events per round */

static void proxy_child(sy_tab *t, const sy_call *call, void *ctx, const sy_ev *coll,
                        int is_send, int start_only, sy_ev *op) {
  ncclProfilerEventDescr_v5_t d;
  sy_d_proxyop(&d, 0, getpid(), 0, 1, 2, is_send);
  sy_start(t, op, call, ctx, coll, NULL, &d, is_send ? "ProxyOp:Send" : "ProxyOp:Recv", 0);
  sy_state(op, ncclProfilerProxyOpInProgress_v4, RP_ARG_NONE, 0);
  if (start_only) return;
  for (int s = 0; s < 2; s++) {
    sy_ev st;
    sy_d_proxystep(&d, 0, s);
    sy_start(t, &st, call, ctx, op, NULL, &d, "ProxyStep", 0);
    sy_state(&st, is_send ? ncclProfilerProxyStepSendGPUWait : ncclProfilerProxyStepRecvWait,
             RP_ARG_TRANS, 0);
    sy_state(&st, is_send ? ncclProfilerProxyStepSendWait : ncclProfilerProxyStepRecvGPUWait,
             RP_ARG_TRANS, 65536);
    sy_stop(t, &st);
  }
  sy_stop(t, op);
}

int rp_synth_reuse(const rp_synth_opts *o) {
  long rounds = o->count > 0 ? o->count : 8;
  sy_tab t = {0};
  void *ctx = NULL;
  rp_host_init(&ctx, 0x5eed0001ull, "reuse", 1, 2, 0);
  ncclProfilerEventDescr_v5_t d;
  for (long r = 0; r < rounds; r++) {
    sy_apicall a;
    sy_apicall_run(&t, &a, ctx, 0, "AllReduce", "CollApi:AllReduce", "Coll:AllReduce",
                   (uint64_t)r, 1024, 2, 0, 0);
    sy_ev early;
    proxy_child(&t, &a.call, ctx, &a.coll, 1, 1, &early);  /* live across the churn */
    sy_stop(&t, &a.coll);
    for (int j = 0; j < CHURN_CALLS; j++) {
      sy_apicall c;
      sy_apicall_run(&t, &c, ctx, 0, "AllGather", "CollApi:AllGather", "Coll:AllGather",
                     (uint64_t)(r * CHURN_CALLS + j), 256, 1, 0, 1);
      if (j % 8 == 0) {
        sy_ev pc;
        sy_d_simple(&d, ncclProfileProxyCtrl, 0);
        sy_start(&t, &pc, NULL, ctx, NULL, NULL, &d, "ProxyCtrl", 0);
        sy_state(&pc, ncclProfilerProxyCtrlAppendEnd, RP_ARG_APPENDED, 2);
        sy_stop(&t, &pc);
      }
    }
    for (int ch = 0; ch < 2; ch++) {      /* children of the long-stopped Coll */
      sy_ev kc;
      uint64_t g0 = sy_gpu_now();
      sy_d_kernelch(&d, 0, ch, g0);
      sy_start(&t, &kc, &a.call, ctx, &a.coll, NULL, &d, "KernelCh", 0);
      sy_state(&kc, ncclProfilerKernelChStop, RP_ARG_PTIMER, g0 + 1000 + (uint64_t)ch);
      sy_stop(&t, &kc);
    }
    sy_ev late;
    proxy_child(&t, &a.call, ctx, &a.coll, 0, 0, &late);
    for (int s = 0; s < 2; s++) {         /* steps of the op that outlived the churn */
      sy_ev st;
      sy_d_proxystep(&d, 0, s);
      sy_start(&t, &st, &a.call, ctx, &early, NULL, &d, "ProxyStep", 0);
      sy_state(&st, ncclProfilerProxyStepSendWait, RP_ARG_TRANS, 4096);
      sy_stop(&t, &st);
    }
    sy_stop(&t, &early);
  }
  rp_host_fini(ctx, 1);
  sy_tab_flush(&t);
  return 1;
}
