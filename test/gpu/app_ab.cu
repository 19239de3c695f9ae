/*
 * app_ab.cu — the "ab" phase of collprof-gpu-app: collprof recording
 * against collprof paused, in one process, block by block.
 *
 * test/gpu/overhead.sh compares separate runs (no plugin, collprof, ...),
 * and separate runs differ by more than the few percent in question: GPU
 * clocks, where the processes and NCCL's threads land, how NCCL set up its
 * channels.  Here the same processes, communicator and buffers time each
 * size in R rounds of two blocks, one with collprof recording and one with
 * it paused (collprof_pause/collprof_resume, include/collprof.h), in
 * alternating order (on-off, off-on, ...), so drift and order hit both
 * alike and each round gives a paired ratio.  Paused, NCCL is asked for
 * one GroupApi per call, which collprof ignores (src/mask_control.c,
 * "Off"), or for nothing with COLLPROF_GPU_SAMPLE=0: "off" is about
 * what no plugin costs, plus those four callbacks.
 *
 * Every rank switches at the same call (all run the same sequence), and a
 * switch reaches NCCL's next call, so each block starts with SETTLE
 * untimed calls.  collprof is found with dlsym (it is preloaded by the MPI
 * layer or the launcher); without it the phase says so and does nothing.
 * NCCL rank 0 writes DIR/ab.json; test/gpu/ab_report.py reads it.
 */
#include "gpu_app.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

enum { SETTLE = 2, AB_MAXSIZES = 64 };
typedef int (*cp_switch_fn)(void);

void app_phase_ab(app_comm *w, int nccl_rank, const app_ab_opt *o) {
  cp_switch_fn pause_fn = (cp_switch_fn)dlsym(RTLD_DEFAULT, "collprof_pause");
  cp_switch_fn resume_fn = (cp_switch_fn)dlsym(RTLD_DEFAULT, "collprof_resume");
  if (!pause_fn || !resume_fn) {
    if (nccl_rank == 0) fprintf(stderr, "collprof-gpu-app: ab phase: collprof_pause not found (collprof not preloaded); skipped\n");
    return;
  }
  const int R = o->rounds > 0 ? o->rounds : 1, M = o->calls > 0 ? o->calls : 1;
  double *on = (double *)calloc((size_t)NOPS * AB_MAXSIZES * R, sizeof *on);
  double *off = (double *)calloc((size_t)NOPS * AB_MAXSIZES * R, sizeof *off);
  size_t used_of[NOPS][AB_MAXSIZES] = {{0}};
  int nsizes[NOPS] = {0};
  if (!on || !off) app_die("calloc", "ab results");
  cudaEvent_t a, b;
  CUDACHECK(cudaEventCreate(&a));
  CUDACHECK(cudaEventCreate(&b));
  resume_fn();
  for (int op = 0; op < NOPS; op++) {
    if (!o->ops[op]) continue;
    int k = 0;
    for (double sz = (double)o->min; sz <= (double)o->max && k < AB_MAXSIZES; sz *= o->factor, k++) {
      size_t used = 0;
      for (int i = 0; i < o->warmup; i++) used = app_op(w, op, (size_t)sz);
      for (int r = 0; r < R; r++) {
        for (int half = 0; half < 2; half++) {
          const int rec = (half == 0) == (r % 2 == 0);   /* on-off, off-on, ... */
          if (rec) resume_fn(); else pause_fn();
          for (int i = 0; i < SETTLE; i++) app_op(w, op, (size_t)sz);
          CUDACHECK(cudaEventRecord(a, w->stream));
          for (int i = 0; i < M; i++) used = app_op(w, op, (size_t)sz);
          CUDACHECK(cudaEventRecord(b, w->stream));
          CUDACHECK(cudaEventSynchronize(b));
          float ms = 0;
          CUDACHECK(cudaEventElapsedTime(&ms, a, b));
          (rec ? on : off)[((size_t)op * AB_MAXSIZES + k) * R + r] = ms * 1000.0 / M;
        }
      }
      resume_fn();
      used_of[op][k] = used;
      if (o->factor <= 1) { k++; break; }
    }
    nsizes[op] = k;
  }
  CUDACHECK(cudaEventDestroy(a));
  CUDACHECK(cudaEventDestroy(b));
  if (nccl_rank == 0) {
    char path[4096];
    snprintf(path, sizeof path, "%s/ab.json", o->out);
    FILE *f = fopen(path, "w");
    if (!f) app_die("cannot write", path);
    fprintf(f, "{\"nranks\":%d,\"calls\":%d,\"rounds\":%d,\"settle\":%d,\"results\":[", w->nranks, M, R, SETTLE);
    int first = 1;
    for (int op = 0; op < NOPS; op++)
      for (int k = 0; k < nsizes[op]; k++) {
        const size_t at = ((size_t)op * AB_MAXSIZES + k) * R;
        fprintf(f, "%s\n {\"op\":\"%s\",\"bytes\":%zu,\"busbw_factor\":%.6f,\"on_us\":[", first ? "" : ",",
                app_op_name[op], used_of[op][k], app_busbw_factor(op, w->nranks));
        for (int r = 0; r < R; r++) fprintf(f, "%s%.4f", r ? "," : "", on[at + r]);
        fprintf(f, "],\"off_us\":[");
        for (int r = 0; r < R; r++) fprintf(f, "%s%.4f", r ? "," : "", off[at + r]);
        fprintf(f, "]}");
        first = 0;
      }
    fprintf(f, "]}\n");
    fclose(f);
  }
  free(on);
  free(off);
}
