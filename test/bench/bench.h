/*
 * bench.h — collprof-bench: CPU cost per event of an NCCL profiler plugin.
 *
 * bench_main.c runs the measurement plan: every configuration (plugin x
 * environment x thread count) in a fresh process (the bench re-executes
 * itself with --child), repetitions alternated, medians printed.
 * bench_tree.c is the child: it dlopens one plugin and drives it with
 * synthetic NCCL-shaped event trees on T threads, one communicator each.
 */
#ifndef COLLPROF_BENCH_H
#define COLLPROF_BENCH_H
#include <stdint.h>

/* What one child measured. */
typedef struct bench_result {
  uint64_t events;        /* starts, all threads */
  uint64_t states;        /* recordEventState calls, all threads */
  uint64_t max_ns;        /* slowest thread's timed loop */
  double ns_per_event;    /* mean over threads of thread time / thread events */
  long long dropped;      /* trace records dropped (parent reads the output), -1 none */
  long long lines;        /* lines the trace files hold (written records) */
  uint64_t proxy_events;  /* proxy mode: starts on the proxy threads */
  uint64_t full_waits;    /* proxy mode: application waits on a full queue */
  double proxy_ns;        /* proxy mode: proxy thread ns per proxy event (timed calls) */
  double scale;           /* slice mode: median over pairs of all-threads / one-thread rate, 0 none */
  uint64_t calls;         /* API calls the events came from, all threads (warm-up left out) */
} bench_result;

/* Child entry: drive `plugin` (a .so exporting ncclProfiler_v5) on
 * `threads` threads, `iters` API calls each (after a warm-up).  Prints one
 * "RESULT events states max_ns ns_per_event proxy_events full_waits
 * proxy_ns calls" line;
 * returns the exit code.
 *
 * Slice mode (COLLPROF_BENCH_SLICES=S, T >= 2, no proxy threads): the
 * timed calls are cut into S pairs of slices, each iters/S calls per
 * running thread: first one thread alone (each thread in turn), then all
 * of them.  RESULT then describes the all-thread slices, and a line
 * "SCALE ratio pairs" follows: per pair, the events per second of the
 * all-thread slice (all threads, by the slowest) over those of the lone
 * slice just before it, median over the pairs.  The machine's speed
 * changes from one second to the next (a 2-core VM here ran the same
 * one-thread loop in 28 or 53 ms, run to run), and slices tens of
 * milliseconds apart see the same machine where separate processes
 * seconds apart do not.
 *
 * COLLPROF_BENCH_CHANNELS=C (1-64, default 2): KernelCh per call, as NCCL
 * sends one per channel (24 for a small all-reduce on 2 H200s); run by
 * hand with --child, for the proxy thread's share at real channel counts
 * (the plan's rows keep 2). */
int bench_child(const char *plugin, int threads, long iters);

/* bench_bind.c: where the calling threads run (COLLPROF_BENCH_BIND=1:
 * thread i on the i-th CPU of the process's starting set, bound after the
 * warm-up, so the plugin's own threads keep every CPU) and, with
 * COLLPROF_BENCH_SLICE_DETAIL=1, each slice's scheduling on stderr. */
typedef struct bench_sched {
  unsigned long long cpu_ns, wait_ns, switches;   /* /proc/thread-self/schedstat */
} bench_sched;
void bench_bind_init(int threads);   /* once, before the threads start */
void bench_bind_self(int idx);       /* each calling thread, after its warm-up */
int bench_slice_detail(void);
void bench_schedstat(bench_sched *s);

#endif
