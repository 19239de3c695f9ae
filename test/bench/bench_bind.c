/*
 * bench_bind.c — where collprof-bench's measuring threads run, and what
 * the scheduler did to them during a slice (bench.h declares both).
 *
 * Binding (COLLPROF_BENCH_BIND=1, collprof-bench's default; --no-bind
 * leaves placement to the kernel): after the warm-up each calling thread
 * binds itself to one CPU of the set the process started with, thread i
 * to the i-th, as mpirun binds one rank per core.  Threads created before
 * that (the plugin's trace writer, a bench proxy thread) keep the whole
 * set.  Why: unbound, a thread woken from the slice barrier was often put
 * on the CPU its sibling was running on while the trace writer ran on the
 * other, and both calling threads then shared one CPU for about 10 ms
 * (schedstat's run delay) until the kernel balanced them: on a 2-core VM
 * that took the trace-on 2-thread figure from about 1.9x to 1.4x with the
 * same CPU time per event (the slice detail below shows it).
 *
 * Slice detail (COLLPROF_BENCH_SLICE_DETAIL=1): one line on stderr per
 * thread and slice: wall time, the thread's CPU time and its run delay
 * (time runnable but waiting for a CPU) from /proc/thread-self/schedstat.
 * Reading /proc is a system call: it happens outside the timed loop.
 */
#include "bench.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cpu_set_t g_start_set;   /* the process's CPUs when the child began */
static int g_bind, g_detail;    /* set before the threads start, read-only after */

void bench_bind_init(int threads) {
  const char *d = getenv("COLLPROF_BENCH_SLICE_DETAIL");
  g_detail = d && atoi(d) == 1;
  const char *e = getenv("COLLPROF_BENCH_BIND");
  g_bind = e && atoi(e) == 1;
  if (!g_bind) return;
  CPU_ZERO(&g_start_set);
  if (sched_getaffinity(0, sizeof g_start_set, &g_start_set) != 0) {
    fprintf(stderr, "collprof-bench: cannot read the CPU set; threads left unbound\n");
    g_bind = 0;
  } else if (CPU_COUNT(&g_start_set) < threads) {
    fprintf(stderr, "collprof-bench: %d threads on %d CPUs: threads left unbound\n", threads,
            CPU_COUNT(&g_start_set));
    g_bind = 0;
  }
}

void bench_bind_self(int idx) {
  if (!g_bind) return;
  int seen = 0;
  for (int c = 0; c < CPU_SETSIZE; c++) {
    if (!CPU_ISSET(c, &g_start_set) || seen++ != idx) continue;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0)
      fprintf(stderr, "collprof-bench: cannot bind a thread to CPU %d; it runs unbound\n", c);
    return;
  }
}

int bench_slice_detail(void) { return g_detail; }

void bench_schedstat(bench_sched *s) {
  memset(s, 0, sizeof *s);
  FILE *f = fopen("/proc/thread-self/schedstat", "r");
  if (!f) return;
  if (fscanf(f, "%llu %llu %llu", &s->cpu_ns, &s->wait_ns, &s->switches) != 3) memset(s, 0, sizeof *s);
  fclose(f);
}
