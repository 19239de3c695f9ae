/*
 * app_main.cu — collprof-gpu-app: command line, MPI and NCCL set-up, and
 * the phases (gpu_app.h says how the files divide the work).
 *
 *   mpirun -np N collprof-gpu-app [--min 8] [--max 64M] [--factor 2]
 *       [--iters 20] [--warmup 5] [--ops allreduce,allgather,...|all]
 *       [--phases sweep,split,graph,ab|all] [--replays 10] [--gpus-per-proc 1|2]
 *       [--iter-times] [--gpu-bound] [--interleave-us N] [--ab-rounds 8] [--out DIR]
 *       [--init-on thread|main|main-grouped]
 *
 * Phases, each on every GPU thread:
 *   sweep  every op of --ops at sizes --min..--max (x --factor), --warmup
 *          untimed calls then --iters calls timed with CUDA events around
 *          the loop (nccl-tests' way); bus bandwidth with nccl-tests' factors.
 *          --iter-times also records a CUDA event after every timed call
 *          (a pool made before the sweep: nothing allocated in the loop)
 *          and writes per size the time of each call and the host clocks
 *          when its timed loop began, to tell one slow call from a uniform
 *          cost and to place it in time (off by default: the plain timing
 *          has no event but the two around the loop)
 *          --gpu-bound queues each size's timed calls behind a kernel that
 *          spins on the GPU (iters x 40 us, at least 2 ms) while the host
 *          issues them, so the GPU runs them back to back and the CUDA
 *          events time the GPU's work, not how fast the host issues calls
 *          (a loop of ~10 us calls is host-bound, the profiler's own cost
 *          included); sweep.json then says per size how long the spin and
 *          the issuing took (issuing longer than the spin: not GPU-bound)
 *          --interleave-us N queues a kernel spinning N us on the same
 *          stream after every call (warm-up and timed), as an application
 *          computing between collectives would: the CUDA-event time per
 *          call then holds it, a profiler's GPU time of the collective
 *          must not (test/gpu/interleave_check.py)
 *   split  ncclCommSplit of the world communicator (2 halves from 4 NCCL
 *          ranks on, else one copy) named "split"; AllReduce, Broadcast and
 *          AllGather on it interleaved with AllReduce on "world", each call
 *          timed with CUDA events on its stream (sweep.json's "split")
 *   graph  a CUDA graph capturing AllReduce x2, AllGather and Broadcast on
 *          "world", launched --replays times
 *   ab     (not in "all") the sweep's ops and sizes again, each timed in
 *          --ab-rounds rounds of --iters calls with collprof recording and
 *          --iters with it paused, alternated in one process (app_ab.cu);
 *          writes DIR/ab.json, read by test/gpu/ab_report.py
 * With --gpus-per-proc 2 every process drives two GPUs from two threads
 * (NCCL ranks 2p and 2p+1).  --init-on says where the world communicator
 * is initialized: on the thread that then calls on it (default), on the
 * main thread before the threads start (main: one GPU per process, a
 * blocking init that NCCL runs on the calling thread), or on the main
 * thread inside ncclGroupStart/End together with a spare communicator
 * that is never called on (main-grouped: NCCL runs a group of several
 * inits on threads of its own, which exit before the group ends; a group
 * of one it runs on the calling thread); collprof's automatic start delay
 * tells these apart (test/gpu/run.sh).  Writes DIR/counts.<world rank>.json (the calls
 * made per func and communicator) and, from rank 0, DIR/sweep.json; prints
 * the sweep as nccl-tests does.
 */
#include "gpu_app.h"
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAXSIZES = 64, MAXTHR = 2 };
enum { INIT_THREAD, INIT_MAIN, INIT_MAIN_GROUPED };   /* --init-on */

static struct {
  size_t min, max;
  double factor;
  int iters, warmup, replays, gpp;
  int init_on;                     /* INIT_*: where the world communicator is initialized */
  int ops[NOPS], phase_sweep, phase_split, phase_graph;
  const char *out;
  int iter_times, gpu_bound;
  double interleave_us;
  int phase_ab, ab_rounds;
} opt = {8, 64u << 20, 2, 20, 5, 10, 1, INIT_THREAD, {1, 1, 1, 1, 1, 1}, 1, 1, 1, ".", 0, 0, 0, 0, 8};

typedef struct gpu_thr {
  int t, nccl_rank, nccl_n, dev;
  ncclUniqueId id;
  app_comm world, split;
  int has_split;
  ncclUniqueId spare_id;   /* --init-on main-grouped: a second communicator, */
  ncclComm_t spare;        /* inited in the group with world, never called on */
} gpu_thr;

/* sweep results of NCCL rank 0 */
static size_t g_size[NOPS][MAXSIZES];
static double g_us[NOPS][MAXSIZES];
static int g_nsizes[NOPS];
/* --iter-times, NCCL rank 0: us of each timed call by CUDA events and us
 * from the loop's start until the host had issued it ([op][size][iter],
 * allocated before the sweep); host clocks just before each size's timed
 * loop: CLOCK_REALTIME ns and CLOCK_MONOTONIC ns (collprof's trace ts) */
static float *g_iter_us, *g_iter_host_us;
static long long g_start_real_ns[NOPS][MAXSIZES], g_start_mono_ns[NOPS][MAXSIZES];
/* --gpu-bound, NCCL rank 0: the spin kernel's length and the host's time
 * to issue the timed calls, us */
static double g_spin_us[NOPS][MAXSIZES], g_issue_us[NOPS][MAXSIZES];

/* Hold the stream for ns nanoseconds of the GPU's global timer. */
__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

/* The split phase, NCCL rank 0: calls and CUDA-event us per op, each call
 * timed on its own stream (events just before and after it).  Two
 * communicators' kernels run at once here, so these times include waiting
 * to start behind the other stream's kernel: gpu_total.py shows them
 * beside the sweep's reference, not as part of it. */
static int g_split_calls[NOPS];
static double g_split_us[NOPS];

static long long clock_ns(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static size_t parse_size(const char *s) {
  char *e;
  double v = strtod(s, &e);
  if (*e == 'K' || *e == 'k') v *= 1024;
  else if (*e == 'M' || *e == 'm') v *= 1024 * 1024;
  else if (*e == 'G' || *e == 'g') v *= 1024.0 * 1024 * 1024;
  return (size_t)v;
}

static void parse_list(const char *s, int *flags, const char *const *names, int n) {
  for (int i = 0; i < n; i++) flags[i] = 0;
  if (!strcmp(s, "all")) { for (int i = 0; i < n; i++) flags[i] = 1; return; }
  char *dup = strdup(s), *save = NULL;
  for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int found = 0;
    for (int i = 0; i < n; i++) if (!strcmp(t, names[i])) flags[i] = found = 1;
    if (!found) app_die("unknown name in list", t);
  }
  free(dup);
}

static void comm_setup(app_comm *ac, const char *name, size_t cap, int dev) {
  ac->name = name;
  ac->cap = cap;
  CUDACHECK(cudaSetDevice(dev));
  CUDACHECK(cudaStreamCreateWithFlags(&ac->stream, cudaStreamNonBlocking));
  CUDACHECK(cudaMalloc(&ac->sbuf, cap));
  CUDACHECK(cudaMalloc(&ac->rbuf, cap));
  CUDACHECK(cudaMemset(ac->sbuf, 0, cap));
  CUDACHECK(cudaMemset(ac->rbuf, 0, cap));
  NCCLCHECK(ncclCommCount(ac->comm, &ac->nranks));
  NCCLCHECK(ncclCommUserRank(ac->comm, &ac->rank));
}

static void phase_sweep(gpu_thr *g) {
  app_comm *w = &g->world;
  cudaEvent_t a, b;
  CUDACHECK(cudaEventCreate(&a));
  CUDACHECK(cudaEventCreate(&b));
  /* --iter-times: one event per timed call, made once and reused by every
   * size; every rank records them so that all run the same stream work */
  int nev = opt.iter_times && opt.iters > 0 ? opt.iters : 0;
  cudaEvent_t *ev = NULL;
  long long *issued = NULL;      /* CLOCK_MONOTONIC ns when call i was issued */
  if (nev) {
    ev = (cudaEvent_t *)calloc((size_t)nev, sizeof *ev);
    issued = (long long *)calloc((size_t)nev, sizeof *issued);
    if (!ev || !issued) app_die("calloc", "iteration events");
    for (int i = 0; i < nev; i++) CUDACHECK(cudaEventCreate(&ev[i]));
    if (g->nccl_rank == 0 && !g_iter_us) {
      g_iter_us = (float *)calloc((size_t)NOPS * MAXSIZES * nev, sizeof *g_iter_us);
      g_iter_host_us = (float *)calloc((size_t)NOPS * MAXSIZES * nev, sizeof *g_iter_host_us);
      if (!g_iter_us || !g_iter_host_us) app_die("calloc", "iteration times");
    }
  }
  for (int op = 0; op < NOPS; op++) {
    if (!opt.ops[op]) continue;
    int k = 0;
    for (double sz = (double)opt.min; sz <= (double)opt.max && k < MAXSIZES; sz *= opt.factor, k++) {
      size_t used = 0;
      const unsigned long long inter_ns = (unsigned long long)(opt.interleave_us * 1000.0);
      for (int i = 0; i < opt.warmup; i++) {
        used = app_op(w, op, (size_t)sz);
        if (inter_ns) spin_kernel<<<1, 1, 0, w->stream>>>(inter_ns);
      }
      long long real_ns = 0, mono_ns = 0, issue0 = 0;
      const double spin_us = opt.iters * 40.0 > 2000.0 ? opt.iters * 40.0 : 2000.0;
      if (opt.gpu_bound) {
        spin_kernel<<<1, 1, 0, w->stream>>>((unsigned long long)(spin_us * 1000.0));
        CUDACHECK(cudaGetLastError());
        issue0 = clock_ns(CLOCK_MONOTONIC);
      }
      if (nev) {
        real_ns = clock_ns(CLOCK_REALTIME);
        mono_ns = clock_ns(CLOCK_MONOTONIC);
        CUDACHECK(cudaEventRecord(a, w->stream));
        for (int i = 0; i < opt.iters; i++) {
          used = app_op(w, op, (size_t)sz);
          if (inter_ns) spin_kernel<<<1, 1, 0, w->stream>>>(inter_ns);
          CUDACHECK(cudaEventRecord(ev[i], w->stream));
          issued[i] = clock_ns(CLOCK_MONOTONIC);
        }
      } else {
        CUDACHECK(cudaEventRecord(a, w->stream));
        for (int i = 0; i < opt.iters; i++) {
          used = app_op(w, op, (size_t)sz);
          if (inter_ns) spin_kernel<<<1, 1, 0, w->stream>>>(inter_ns);
        }
      }
      CUDACHECK(cudaEventRecord(b, w->stream));
      const double issue_us = opt.gpu_bound ? (clock_ns(CLOCK_MONOTONIC) - issue0) / 1e3 : 0;
      CUDACHECK(cudaEventSynchronize(b));
      float ms = 0;
      CUDACHECK(cudaEventElapsedTime(&ms, a, b));
      if (g->nccl_rank == 0) {
        g_spin_us[op][k] = opt.gpu_bound ? spin_us : 0;
        g_issue_us[op][k] = issue_us;
        g_size[op][k] = used;
        g_us[op][k] = opt.iters ? ms * 1000.0 / opt.iters : 0;
        g_start_real_ns[op][k] = real_ns;
        g_start_mono_ns[op][k] = mono_ns;
        size_t at = ((size_t)op * MAXSIZES + k) * nev;
        for (int i = 0; i < nev; i++) {
          CUDACHECK(cudaEventElapsedTime(&ms, i ? ev[i - 1] : a, ev[i]));
          g_iter_us[at + i] = ms * 1000.0f;
          g_iter_host_us[at + i] = (float)((issued[i] - mono_ns) / 1e3);
        }
      }
      if (opt.factor <= 1) break;
    }
    if (g->nccl_rank == 0) g_nsizes[op] = k;
  }
  for (int i = 0; i < nev; i++) CUDACHECK(cudaEventDestroy(ev[i]));
  free(ev);
  free(issued);
  CUDACHECK(cudaEventDestroy(a));
  CUDACHECK(cudaEventDestroy(b));
}

static void phase_split(gpu_thr *g) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.commName = "split";
  int color = g->nccl_n >= 4 ? g->nccl_rank % 2 : 0;
  NCCLCHECK(ncclCommSplit(g->world.comm, color, g->nccl_rank, &g->split.comm, &cfg));
  comm_setup(&g->split, "split", 4u << 20, g->dev);
  g->has_split = 1;
  enum { ITERS = 10, PER = 4 };
  static const int ops[PER] = {OP_ALLREDUCE, OP_ALLREDUCE, OP_BROADCAST, OP_ALLGATHER};
  static const size_t sizes[PER] = {1u << 20, 1u << 20, 64u << 10, 256u << 10};
  cudaEvent_t ev[ITERS * PER][2];
  for (int i = 0; i < ITERS * PER; i++)
    for (int j = 0; j < 2; j++) CUDACHECK(cudaEventCreate(&ev[i][j]));
  for (int i = 0; i < ITERS; i++)
    for (int k = 0; k < PER; k++) {
      app_comm *c = k == 1 ? &g->world : &g->split;   /* the second AllReduce: on "world" */
      CUDACHECK(cudaEventRecord(ev[i * PER + k][0], c->stream));
      app_op(c, ops[k], sizes[k]);
      CUDACHECK(cudaEventRecord(ev[i * PER + k][1], c->stream));
    }
  CUDACHECK(cudaStreamSynchronize(g->split.stream));
  CUDACHECK(cudaStreamSynchronize(g->world.stream));
  for (int i = 0; i < ITERS * PER; i++) {
    float ms = 0;
    CUDACHECK(cudaEventElapsedTime(&ms, ev[i][0], ev[i][1]));
    if (g->nccl_rank == 0) {
      g_split_calls[ops[i % PER]]++;
      g_split_us[ops[i % PER]] += ms * 1000.0;
    }
    for (int j = 0; j < 2; j++) CUDACHECK(cudaEventDestroy(ev[i][j]));
  }
}

static void phase_graph(gpu_thr *g) {
  app_comm *w = &g->world;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDACHECK(cudaStreamSynchronize(w->stream));
  CUDACHECK(cudaStreamBeginCapture(w->stream, cudaStreamCaptureModeThreadLocal));
  w->capturing = 1;
  app_op(w, OP_ALLREDUCE, 1u << 20);
  app_op(w, OP_ALLREDUCE, 4u << 20);
  app_op(w, OP_ALLGATHER, 1u << 20);
  app_op(w, OP_BROADCAST, 1u << 20);
  w->capturing = 0;
  CUDACHECK(cudaStreamEndCapture(w->stream, &graph));
  CUDACHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < opt.replays; i++) {
    CUDACHECK(cudaGraphLaunch(exec, w->stream));
    app_count_replay(w);
  }
  CUDACHECK(cudaStreamSynchronize(w->stream));
  CUDACHECK(cudaGraphExecDestroy(exec));
  CUDACHECK(cudaGraphDestroy(graph));
}

/* Phase progress on stderr from NCCL rank 0, so a log shows where a run stood. */
static void progress(gpu_thr *g, const char *what) {
  if (g->nccl_rank != 0) return;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  fprintf(stderr, "collprof-gpu-app: %s done at %.3f s\n", what, ts.tv_sec + ts.tv_nsec / 1e9);
  fflush(stderr);
}

static void world_init(gpu_thr *g) {
  CUDACHECK(cudaSetDevice(g->dev));
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.commName = "world";
  NCCLCHECK(ncclCommInitRankConfig(&g->world.comm, g->nccl_n, g->id, g->nccl_rank, &cfg));
}

static void *thr_main(void *arg) {
  gpu_thr *g = (gpu_thr *)arg;
  CUDACHECK(cudaSetDevice(g->dev));
  if (opt.init_on == INIT_THREAD) world_init(g);
  comm_setup(&g->world, "world", opt.max > (4u << 20) ? opt.max : (4u << 20), g->dev);
  progress(g, "init");
  if (opt.phase_sweep) { phase_sweep(g); progress(g, "sweep"); }
  if (opt.phase_split) { phase_split(g); progress(g, "split"); }
  if (opt.phase_graph) { phase_graph(g); progress(g, "graph"); }
  if (opt.phase_ab) {
    const app_ab_opt ab = {opt.min, opt.max, opt.factor, opt.iters, opt.warmup, opt.ab_rounds, opt.ops, opt.out};
    app_phase_ab(&g->world, g->nccl_rank, &ab);
    progress(g, "ab");
  }
  CUDACHECK(cudaStreamSynchronize(g->world.stream));
  /* destroy so that the profiler's finalize runs before MPI_Finalize */
  if (g->has_split) NCCLCHECK(ncclCommDestroy(g->split.comm));
  NCCLCHECK(ncclCommDestroy(g->world.comm));
  progress(g, "destroy");
  return NULL;
}

static void write_counts(int wrank, int wsize, gpu_thr *g, int nthr) {
  char path[4096];
  snprintf(path, sizeof path, "%s/counts.%d.json", opt.out, wrank);
  FILE *f = fopen(path, "w");
  if (!f) app_die("cannot write", path);
  fprintf(f, "{\"worldRank\":%d,\"worldSize\":%d,\"gpusPerProc\":%d,\"graphReplays\":%d,\"threads\":[",
          wrank, wsize, nthr, opt.phase_graph ? opt.replays : 0);
  for (int t = 0; t < nthr; t++) {
    fprintf(f, "%s\n {\"ncclRank\":%d,\"ncclRanks\":%d,\"device\":%d,\"comms\":[", t ? "," : "",
            g[t].nccl_rank, g[t].nccl_n, g[t].dev);
    app_comm *cs[2] = {&g[t].world, &g[t].split};
    int nc = g[t].has_split ? 2 : 1;
    for (int c = 0; c < nc; c++) {
      fprintf(f, "%s\n  {\"name\":\"%s\",\"nranks\":%d,\"rank\":%d,\"funcs\":{", c ? "," : "",
              cs[c]->name, cs[c]->nranks, cs[c]->rank);
      int first = 1;
      for (int fn = 0; fn < NFUNCS; fn++) {
        app_count *k = &cs[c]->count[fn];
        if (!k->api) continue;
        fprintf(f, "%s\"%s\":{\"api\":%llu,\"eager\":%llu,\"eagerBytes\":%llu,\"captured\":%llu,"
                   "\"capturedBytes\":%llu,\"replayed\":%llu,\"replayedBytes\":%llu}",
                first ? "" : ",", app_func_name[fn], (unsigned long long)k->api,
                (unsigned long long)k->eager, (unsigned long long)k->eager_bytes,
                (unsigned long long)k->captured, (unsigned long long)k->captured_bytes,
                (unsigned long long)k->replayed, (unsigned long long)k->replayed_bytes);
        first = 0;
      }
      fprintf(f, "}}");
    }
    fprintf(f, "]}");
  }
  fprintf(f, "]}\n");
  fclose(f);
}

static void write_sweep(int n) {
  char path[4096];
  snprintf(path, sizeof path, "%s/sweep.json", opt.out);
  FILE *f = fopen(path, "w");
  if (!f) app_die("cannot write", path);
  fprintf(f, "{\"nranks\":%d,\"iters\":%d,\"warmup\":%d,\"iterTimes\":%s,\"gpuBound\":%s,\"interleaveUs\":%.1f,\"results\":[",
          n, opt.iters, opt.warmup, g_iter_us ? "true" : "false", opt.gpu_bound ? "true" : "false",
          opt.interleave_us);
  int first = 1;
  for (int op = 0; op < NOPS; op++) {
    if (!opt.ops[op] || !g_nsizes[op]) continue;
    double sum = 0;
    printf("#\n# %s, %d ranks, %d iterations\n#  %12s %12s %12s %12s\n", app_op_name[op], n,
           opt.iters, "size(B)", "time(us)", "algbw(GB/s)", "busbw(GB/s)");
    for (int k = 0; k < g_nsizes[op]; k++) {
      double us = g_us[op][k];
      double alg = us > 0 ? (double)g_size[op][k] / (us * 1e3) : 0;
      double bus = alg * app_busbw_factor(op, n);
      sum += bus;
      printf("   %12zu %12.2f %12.2f %12.2f\n", g_size[op][k], us, alg, bus);
      fprintf(f, "%s\n {\"op\":\"%s\",\"bytes\":%zu,\"time_us\":%.3f,\"algbw\":%.4f,\"busbw\":%.4f",
              first ? "" : ",", app_op_name[op], g_size[op][k], us, alg, bus);
      if (opt.gpu_bound)
        fprintf(f, ",\"spin_us\":%.1f,\"issue_us\":%.1f", g_spin_us[op][k], g_issue_us[op][k]);
      if (g_iter_us) {
        /* --iter-times: host clocks before the timed loop, us of each call
         * (CUDA events), us from the loop's start until each was issued */
        fprintf(f, ",\"host_start_ns\":%lld,\"host_start_mono_ns\":%lld,\"iter_us\":[",
                g_start_real_ns[op][k], g_start_mono_ns[op][k]);
        size_t at = ((size_t)op * MAXSIZES + k) * opt.iters;
        for (int i = 0; i < opt.iters; i++) fprintf(f, "%s%.3f", i ? "," : "", g_iter_us[at + i]);
        fprintf(f, "],\"iter_host_us\":[");
        for (int i = 0; i < opt.iters; i++) fprintf(f, "%s%.3f", i ? "," : "", g_iter_host_us[at + i]);
        fprintf(f, "]");
      }
      fprintf(f, "}");
      first = 0;
    }
    printf("# %s avg bus bandwidth : %.3f GB/s\n", app_op_name[op], sum / g_nsizes[op]);
  }
  fprintf(f, "]");
  /* the split phase (when it ran): calls and CUDA-event us per op, NCCL rank 0 */
  int any = 0;
  for (int op = 0; op < NOPS; op++) {
    if (!g_split_calls[op]) continue;
    fprintf(f, "%s\"%s\":{\"calls\":%d,\"us\":%.3f}", any ? "," : ",\"split\":{", app_op_name[op],
            g_split_calls[op], g_split_us[op]);
    any = 1;
  }
  if (any) fprintf(f, "}");
  fprintf(f, "}\n");
  fclose(f);
}

int main(int argc, char **argv) {
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int wrank, wsize;
  MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  int phases[4];
  const char *const phase_names[4] = {"sweep", "split", "graph", "ab"};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--iter-times")) { opt.iter_times = 1; continue; }   /* the flags */
    if (!strcmp(a, "--gpu-bound")) { opt.gpu_bound = 1; continue; }
    if (!v) app_die("missing value after", a);
    i++;
    if (!strcmp(a, "--min")) opt.min = parse_size(v);
    else if (!strcmp(a, "--max")) opt.max = parse_size(v);
    else if (!strcmp(a, "--factor")) opt.factor = atof(v);
    else if (!strcmp(a, "--iters")) opt.iters = atoi(v);
    else if (!strcmp(a, "--warmup")) opt.warmup = atoi(v);
    else if (!strcmp(a, "--replays")) opt.replays = atoi(v);
    else if (!strcmp(a, "--interleave-us")) opt.interleave_us = atof(v);
    else if (!strcmp(a, "--ab-rounds")) opt.ab_rounds = atoi(v);
    else if (!strcmp(a, "--gpus-per-proc")) opt.gpp = atoi(v) == 2 ? 2 : 1;
    else if (!strcmp(a, "--init-on"))
      opt.init_on = !strcmp(v, "thread") ? INIT_THREAD : !strcmp(v, "main") ? INIT_MAIN
                  : !strcmp(v, "main-grouped") ? INIT_MAIN_GROUPED : (app_die("bad --init-on", v), 0);
    else if (!strcmp(a, "--out")) opt.out = v;
    else if (!strcmp(a, "--ops")) parse_list(v, opt.ops, app_op_name, NOPS);
    else if (!strcmp(a, "--phases")) {
      const int all = !strcmp(v, "all");
      parse_list(v, phases, phase_names, 4);
      opt.phase_sweep = phases[0]; opt.phase_split = phases[1]; opt.phase_graph = phases[2];
      opt.phase_ab = phases[3] && !all;   /* "all": the three checked by run.sh */
    } else app_die("unknown option", a);
  }
  if (opt.min < 1) opt.min = 1;

  /* local rank picks the GPU(s) */
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, wrank, MPI_INFO_NULL, &local);
  int lrank;
  MPI_Comm_rank(local, &lrank);
  int ndev = 0;
  CUDACHECK(cudaGetDeviceCount(&ndev));

  ncclUniqueId id;
  if (wrank == 0) NCCLCHECK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclUniqueId spare_id;
  memset(&spare_id, 0, sizeof spare_id);
  if (opt.init_on == INIT_MAIN_GROUPED) {
    if (wrank == 0) NCCLCHECK(ncclGetUniqueId(&spare_id));
    MPI_Bcast(&spare_id, sizeof spare_id, MPI_BYTE, 0, MPI_COMM_WORLD);
  }

  gpu_thr g[MAXTHR];
  memset(g, 0, sizeof g);
  pthread_t tid[MAXTHR];
  for (int t = 0; t < opt.gpp; t++) {
    g[t].t = t;
    g[t].nccl_n = wsize * opt.gpp;
    g[t].nccl_rank = wrank * opt.gpp + t;
    g[t].dev = (lrank * opt.gpp + t) % ndev;
    g[t].id = id;
    g[t].spare_id = spare_id;
  }
  /* --init-on main: blocking inits of two ranks of one communicator on one
   * thread would wait for each other, so two GPUs need the group */
  if (opt.init_on == INIT_MAIN && opt.gpp > 1) app_die("--init-on main needs", "--gpus-per-proc 1");
  if (opt.init_on != INIT_THREAD) {
    if (opt.init_on == INIT_MAIN_GROUPED) NCCLCHECK(ncclGroupStart());
    for (int t = 0; t < opt.gpp; t++) {
      world_init(&g[t]);
      if (opt.init_on == INIT_MAIN_GROUPED) {
        ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
        cfg.commName = "spare";
        NCCLCHECK(ncclCommInitRankConfig(&g[t].spare, g[t].nccl_n, g[t].spare_id, g[t].nccl_rank, &cfg));
      }
    }
    if (opt.init_on == INIT_MAIN_GROUPED) NCCLCHECK(ncclGroupEnd());
  }
  for (int t = 0; t < opt.gpp; t++)
    if (pthread_create(&tid[t], NULL, thr_main, &g[t]) != 0) app_die("pthread_create", "failed");
  for (int t = 0; t < opt.gpp; t++) pthread_join(tid[t], NULL);
  for (int t = 0; t < opt.gpp; t++)
    if (g[t].spare) { CUDACHECK(cudaSetDevice(g[t].dev)); NCCLCHECK(ncclCommDestroy(g[t].spare)); }

  write_counts(wrank, wsize, g, opt.gpp);
  if (wrank == 0 && opt.phase_sweep) write_sweep(wsize * opt.gpp);
  free(g_iter_us);
  free(g_iter_host_us);
  MPI_Comm_free(&local);
  MPI_Finalize();
  return 0;
}
