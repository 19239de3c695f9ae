/*
 * replay_synth_pxn.c — `--synthetic pxn`: proxy work issued by another
 * local process (PXN).  ProxyOps arrive with proxyOp.pid of a foreign
 * process, a context value that is a pointer into that process, and a
 * parentObj that is that process's Coll pointer; their ProxySteps carry the
 * same foreign context and the ProxyOp handle this plugin returned.  The
 * plugin must not dereference the foreign values and must file the events
 * as PXN (isPxn, originPid, a PXN root in the path).  Expected paths name
 * that root "@PXN" (the plugin's element name for it is its own choice).
 * A normal local API call with a local ProxyOp runs alongside for contrast.
 * --count N: foreign ProxyOps (default 400).
 */
#include <unistd.h>
#include "replay_synth.h"

int rp_synth_pxn(const rp_synth_opts *o) {
  long n = o->count > 0 ? o->count : 400;
  sy_tab t = {0};
  void *ctx = NULL;
  rp_host_init(&ctx, 0x5eed0003ull, "pxn", 1, 4, 1);
  void *foreign_ctx = (void *)(uintptr_t)0x55f6860f5eb0ull;     /* like a heap pointer */
  pid_t foreign_pid = getpid() + 1;
  ncclProfilerEventDescr_v5_t d;
  for (long i = 0; i < n; i++) {
    int is_send = (int)(i & 1);
    sy_ev op;
    sy_d_proxyop(&d, 0, foreign_pid, (int)(i % 4), 2, 2, is_send);
    d.parentObj = (void *)(uintptr_t)(0x55f67e4a4830ull + (uint64_t)i * 0x40);
    sy_start(&t, &op, NULL, foreign_ctx, NULL, NULL, &d, is_send ? "ProxyOp:Send" : "ProxyOp:Recv", 1);
    sy_state(&op, ncclProfilerProxyOpInProgress_v4, RP_ARG_NONE, 0);
    for (int s = 0; s < 2; s++) {
      sy_ev st;
      sy_d_proxystep(&d, 0, s);
      sy_start(&t, &st, NULL, foreign_ctx, &op, NULL, &d, "ProxyStep", 0);
      sy_state(&st, is_send ? ncclProfilerProxyStepSendGPUWait : ncclProfilerProxyStepRecvWait, RP_ARG_TRANS, 0);
      sy_state(&st, is_send ? ncclProfilerProxyStepSendWait : ncclProfilerProxyStepRecvGPUWait, RP_ARG_TRANS, 131072);
      sy_stop(&t, &st);
    }
    sy_stop(&t, &op);
    if (i % 50 == 0) {   /* local work on the same proxy thread */
      sy_apicall a;
      sy_apicall_run(&t, &a, ctx, 1, "AllReduce", "CollApi:AllReduce", "Coll:AllReduce",
                     (uint64_t)i, 1024, 1, 0, 1);
      sy_ev lop;
      sy_d_proxyop(&d, 1, getpid(), 0, 2, 1, 1);
      sy_start(&t, &lop, &a.call, ctx, &a.coll, NULL, &d, "ProxyOp:Send", 0);
      sy_stop(&t, &lop);
    }
  }
  rp_host_fini(ctx, 1);
  sy_tab_flush(&t);
  return 1;
}
