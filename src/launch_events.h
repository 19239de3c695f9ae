/*
 * launch_events.h — the CUDA driver calls the launch timer makes
 * (launch_timer.c), and nothing else of CUDA: a pair of timing events made
 * in a context, recorded on a stream, queried and read; the thread's
 * current context; whether a stream is being captured; the thread's
 * capture mode switched to relaxed around the calls.
 *
 * The entry points come from cp_cuda_sym (cuda_driver.h): the plugin
 * links no CUDA library and loads where there is none.  CUDA's handles are
 * opaque pointers here and its status codes stay inside launch_events.c;
 * what the launch timer sees is "done", "not yet" and "failed".  None of
 * these may run inside an event callback's common path: each is a driver
 * call, and the launch timer makes them only for sampled launches.
 */
#ifndef COLLPROF_LAUNCH_EVENTS_H
#define COLLPROF_LAUNCH_EVENTS_H
#pragma GCC visibility push(hidden)

/* A start and a stop event, both made in ctx (NULL before the first
 * cp_lte_pair_make). */
typedef struct cp_lte_pair {
  void *ctx, *ev0, *ev1;
} cp_lte_pair;

/* Loads the entry points, once (dlopen: never from a callback); returns
 * cp_lte_ok().  Thread-safe. */
int cp_lte_load(void);
/* 1 once cp_lte_load found every entry point the timer needs. */
int cp_lte_ok(void);

/* The calling thread's current context, or NULL when it has none, the
 * query failed, or stream is being captured (then nothing may be recorded
 * on it: a capture would hold the event). */
void *cp_lte_launch_context(void *stream);

/* While any thread captures a CUDA graph, a call such as cuEventQuery can
 * invalidate the capture; NCCL switches its own calls to relaxed mode and
 * so do these.  begin returns the mode to put back (-1: none). */
int cp_lte_relaxed_begin(void);
void cp_lte_relaxed_end(int mode);

/* p's events made in ctx (kept when they already are; remade, the old
 * ones destroyed in their own context, when p moves to another).  0, or -1
 * when the driver would not make them (p then holds none). */
int cp_lte_pair_make(cp_lte_pair *p, void *ctx);
/* Records the start (which 0) or stop (1) event on stream: 0, or -1. */
int cp_lte_record(const cp_lte_pair *p, int which, void *stream);
/* 1 when the start event has completed (the stream had reached it). */
int cp_lte_start_done(const cp_lte_pair *p);

enum { CP_LTE_DONE = 0, CP_LTE_NOT_READY = 1, CP_LTE_FAILED = 2 };
/* The span from start to stop in ms into *ms, once the stop event has
 * completed (DONE); NOT_READY before; FAILED when the context or either
 * event call failed.  The pair's context is made current for the calls
 * when it is not, and put back. */
int cp_lte_elapsed(const cp_lte_pair *p, float *ms);

#pragma GCC visibility pop
#endif
