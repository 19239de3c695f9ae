/*
 * test_proxy_defer.c — COLLPROF_PROXY_DEFER=1 (src/proxy_defer.h) on the
 * paths the capture replays never take, driven through the plugin's
 * ncclProfiler_v5 table as NCCL's proxy thread would:
 *   - a thread whose ring fills (the applier held off with the test hook,
 *     so it fills for certain) applies its own ring: nothing is lost,
 *     every event and state reaches the profile once;
 *   - stops and states on handles that are no longer known (the id handed
 *     out again after CP_DQ_IDS - 2 later starts) or were never handed
 *     out (wrong generation, id 0, id >= CP_DQ_IDS, no such ring) are
 *     counted stale, reported by one line, and touch no live event;
 *   - a ring taken over from a thread that exited: the old thread's
 *     records are all applied first, the new thread's carry its own
 *     thread id in the trace (start and stop; commit 06f22e8);
 *   - a small API call with its KernelCh on another thread gives the same
 *     path numbers deferred as inline (a forked child runs it with
 *     COLLPROF_PROXY_DEFER=0).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tap.h"
#include "h1_util.h"
#include "proxy_defer.h"
#include "trace.h"
#include "trace_writer.h"

#define PC ((uint64_t)ncclProfileProxyCtrl)
#define PC_PATH "ProxyCtrl"

static void *g_ctx;

/* ---- helpers ---- */

static int my_tid(void) { return (int)syscall(SYS_gettid); }
static uint32_t ring_no(void *h) { return (uint32_t)((uint64_t)(uintptr_t)h >> 48) & 0xFFFu; }
static uint32_t id_of(void *h) { return (uint32_t)(uintptr_t)h; }
static uint32_t gen_of(void *h) { return (uint32_t)((uint64_t)(uintptr_t)h >> 32) & 0xFFFFu; }
static void *dq_handle(uint32_t ring, uint32_t gen, uint32_t id) {
  return (void *)(uintptr_t)((CP_DQ_TAG << 60) | ((uint64_t)ring << 48) | ((uint64_t)gen << 32) | id);
}

static void *pc_start(void) { return h1_start(g_ctx, PC, NULL, NULL); }
static void pc_state(void *h) { ncclProfiler_v5.recordEventState(h, ncclProfilerProxyCtrlActive, NULL); }
static void pc_stop(void *h) { ncclProfiler_v5.stopEvent(h); }
/* One ProxyCtrl event: start, one state, stop (3 callbacks). */
static void *pc_event(void) {
  void *h = pc_start();
  pc_state(h);
  pc_stop(h);
  return h;
}

static cp_defer_counts counts(void) {
  cp_defer_counts c;
  cp_defer_get_counts(&c);
  return c;
}

/* What the core recorded (a snapshot applies what is still recorded). */
typedef struct core_numbers { uint64_t pc_calls, pc_states, events, bad, trace_dropped; } core_numbers;
static core_numbers core_now(void) {
  core_numbers n = {0, 0, 0, 0, 0};
  collprof_snapshot s;
  if (collprof_snapshot_take(&s) != 0) return n;
  const collprof_path_stat *p = h1_find(&s, PC_PATH);
  if (p) { n.pc_calls = p->calls; n.pc_states = p->states; }
  n.events = s.events_recorded;
  n.bad = s.bad_calls;
  n.trace_dropped = s.trace_dropped;
  collprof_snapshot_free(&s);
  return n;
}

typedef struct worker {
  void *(*fn)(struct worker *);
  int n, tid;
  uint32_t ring;
  void *h0, *h_reused, *live;
} worker;
static void *worker_main(void *a) {
  worker *w = a;
  w->tid = my_tid();
  return w->fn(w);
}
static void run_thread(worker *w) {
  pthread_t t;
  pthread_create(&t, NULL, worker_main, w);
  pthread_join(t, NULL);
}

/* n ProxyCtrl events; the ring number their handles name. */
static void *events_fn(worker *w) {
  void *h = NULL;
  for (int i = 0; i < w->n; i++) h = pc_event();
  w->ring = ring_no(h);
  return NULL;
}

/* ---- trace: ProxyCtrl event records by start and stop thread id ---- */

static int field_tid(const char *line, const char *obj) {
  const char *p = strstr(line, obj);
  p = p ? strstr(p, "\"tid\":") : NULL;
  return p ? atoi(p + 6) : -1;
}
/* Records with start tid a and stop tid b (-1: any); mixed: start != stop. */
static int trace_pc(const char *file, int a, int b, int mixed) {
  FILE *f = fopen(file, "r");
  if (!f) return -1;
  char want[96];
  snprintf(want, sizeof want, "\"type\":\"%s\"", ncclProfileTypeName(PC, 0));
  char *line = NULL;
  size_t cap = 0;
  int n = 0;
  while (getline(&line, &cap, f) > 0) {
    if (!strstr(line, "\"recordType\":\"event\"") || !strstr(line, want)) continue;
    const int s = field_tid(line, "\"start\":{"), e = field_tid(line, "\"stop\":{");
    if (mixed) n += s != e;
    else n += (a < 0 || s == a) && (b < 0 || e == b);
  }
  free(line);
  fclose(f);
  return n;
}

/* ---- 3. a ring taken over from a thread that exited ---- */

static worker g_old = {events_fn, 50, 0, 0, NULL, NULL, NULL};
static worker g_new = {events_fn, 40, 0, 0, NULL, NULL, NULL};

static void ring_reuse(void) {
  const cp_defer_counts c0 = counts();
  cp_defer_hold_applier(1);
  run_thread(&g_old);   /* its records wait in its ring after it exited */
  const cp_defer_counts c1 = counts();
  is_u(c1.recorded - c1.applied, 3 * g_old.n, "reuse: the exited thread's %d records wait in its ring", 3 * g_old.n);
  cp_defer_hold_applier(0);
  cp_defer_flush();   /* applies them; the dead thread's ring is free after */
  const cp_defer_counts c2 = counts();
  is_u(c2.applied - c0.applied, 3 * g_old.n, "reuse: all of the exited thread's records applied");
  run_thread(&g_new);
  cp_defer_flush();
  const cp_defer_counts c3 = counts();
  is_u(g_new.ring, g_old.ring, "reuse: the new thread records into the exited thread's ring (%u)", g_old.ring);
  ok(g_new.tid != g_old.tid, "reuse: two thread ids (%d, %d)", g_old.tid, g_new.tid);
  is_u(c3.applied - c2.applied, 3 * g_new.n, "reuse: the new thread's records applied");
  is_u(c3.recorded - c0.recorded, c3.applied - c0.applied, "reuse: recorded == applied");
  /* the trace ids are checked at the end, when the trace is written */
}

/* ---- 1. a full ring: its own thread applies it ---- */

enum { FULL_EVENTS = 4000 };   /* 3 records each: 12000 > CP_DQ_RECS */
static worker g_filler = {events_fn, FULL_EVENTS, 0, 0, NULL, NULL, NULL};

static void ring_full(void) {
  const core_numbers n0 = core_now();
  const cp_defer_counts c0 = counts();
  cp_defer_hold_applier(1);
  run_thread(&g_filler);
  const cp_defer_counts held = counts();
  cp_defer_hold_applier(0);
  const uint64_t rec = held.recorded - c0.recorded, app = held.applied - c0.applied;
  diag("full: %llu records, %llu applied by the recording thread in %llu turns while the applier was held",
       (unsigned long long)rec, (unsigned long long)app, (unsigned long long)(held.full - c0.full));
  is_u(rec, 3 * FULL_EVENTS, "full: every callback recorded");
  ok(held.full > c0.full, "full: the ring was full (counted %llu times)", (unsigned long long)(held.full - c0.full));
  ok(app > 0 && rec - app <= CP_DQ_RECS, "full: the recording thread applied its own ring (%llu), never more than "
     "%d waiting", (unsigned long long)app, CP_DQ_RECS);
  cp_defer_flush();
  const cp_defer_counts c1 = counts();
  is_u(c1.applied - c0.applied, rec, "full: after a flush everything recorded is applied");
  is_u(c1.applied, c1.recorded, "full: applied == recorded overall");
  const core_numbers n1 = core_now();
  is_u(n1.pc_calls - n0.pc_calls, FULL_EVENTS, "full: %d ProxyCtrl events reach the profile", FULL_EVENTS);
  is_u(n1.pc_states - n0.pc_states, FULL_EVENTS, "full: ...with their %d states", FULL_EVENTS);
  is_u(n1.events - n0.events, FULL_EVENTS, "full: events recorded by the core");
  is_u(n1.bad - n0.bad, 0, "full: no bad calls");
}

/* ---- 2. stale and never handed out deferred handles ---- */

/* A state and a stop on h: 2 stale when h is not known. */
static void state_stop(void *h) {
  pc_state(h);
  pc_stop(h);
}

/* Handles of ring `ring` never handed out: a live one's id with another
 * generation, id 0, ids from CP_DQ_IDS up, and a ring that does not exist:
 * a state and a stop on each. */
static void bogus_calls(uint32_t ring, void *live) {
  state_stop(dq_handle(ring, gen_of(live) ^ 0x4000u, id_of(live)));
  state_stop(dq_handle(ring, 1, 0));
  state_stop(dq_handle(ring, 0, 0));   /* id 0's generation is 0: only the id check tells */
  state_stop(dq_handle(ring, 1, CP_DQ_IDS));
  state_stop(dq_handle(ring, 1, 0xFFFFFFFFu));
  state_stop(dq_handle(0xFFF, 1, 1));
}
enum { BOGUS_STALE = 12 };

enum { SAFE_LATER = CP_DQ_IDS - 2 };   /* FIFO of CP_DQ_IDS-1 ids, h0's one among them */
static uint64_t g_stale_at_boundary, g_bad_at_boundary;

static void *stale_fn(worker *w) {
  w->h0 = pc_start();
  pc_stop(w->h0);
  w->ring = ring_no(w->h0);
  for (int i = 0; i < SAFE_LATER; i++) pc_stop(pc_start());
  /* still known: a state on a stopped event, which the core calls bad */
  pc_state(w->h0);
  cp_defer_flush();
  g_stale_at_boundary = counts().stale;
  g_bad_at_boundary = h1_bad_calls();
  w->h_reused = pc_start();   /* the next start gets h0's id back */
  pc_stop(w->h_reused);
  state_stop(w->h0);          /* 2 stale */
  w->live = pc_start();
  bogus_calls(w->ring, w->live);   /* from the owning thread: recorded, stale when applied */
  pc_stop(w->live);
  return NULL;
}
static worker g_stale = {stale_fn, 0, 0, 0, NULL, NULL, NULL};

static void stale_handles(void) {
  const core_numbers n0 = core_now();
  const cp_defer_counts c0 = counts();
  is_u(c0.stale, 0, "stale: none before");
  run_thread(&g_stale);
  cp_defer_flush();
  const cp_defer_counts c1 = counts();
  is_u(g_stale_at_boundary, 0, "stale: h0 still known after %d later starts", SAFE_LATER);
  is_u(g_bad_at_boundary - n0.bad, 1, "stale: ...a state on it reaches the core (a state on a stopped event)");
  is_u(id_of(g_stale.h_reused), id_of(g_stale.h0), "stale: the next start reuses h0's id (%u)", id_of(g_stale.h0));
  ok(gen_of(g_stale.h_reused) != gen_of(g_stale.h0), "stale: ...with a new generation");
  is_u(c1.stale, 2 + BOGUS_STALE, "stale: h0 and the never handed out handles counted stale on their thread");
  const core_numbers n1 = core_now();
  /* from a thread without a ring (applied inline, after everything recorded) */
  state_stop(g_stale.h0);
  state_stop(g_stale.h_reused);   /* known: a state and a stop on a stopped event */
  bogus_calls(g_stale.ring, g_stale.live);
  const cp_defer_counts c2 = counts();
  is_u(c2.stale - c1.stale, 2 + BOGUS_STALE, "stale: the same from another thread, counted stale");
  const core_numbers n2 = core_now();
  is_u(n1.pc_calls - n0.pc_calls, SAFE_LATER + 3, "stale: only the real events stopped (no bogus stop hit one)");
  is_u(n1.pc_states - n0.pc_states, 0, "stale: no bogus state landed on the live event");
  is_u(n1.bad - n0.bad, 1, "stale: stale calls are not bad calls of the core");
  is_u(n2.bad - n1.bad, 2, "stale: the known stopped handle's state and stop are bad calls");
  is_u(n2.pc_calls, n1.pc_calls, "stale: no event stopped by a call from another thread");
  is_u(c2.applied, c2.recorded, "stale: applied == recorded");
}

/* ---- 4. deferred == inline on a small API call ---- */

typedef struct kc_args { void *coll; int nch; } kc_args;
static void *kernel_channels(void *a) {
  kc_args *k = a;
  for (int ch = 0; ch < k->nch; ch++) {
    void *h = h1_start_kch(g_ctx, k->coll, 1000000 + 100 * (uint64_t)ch);
    h1_kch_stop(h, 1005000 + 300 * (uint64_t)ch);
  }
  return NULL;
}

/* `calls` AllReduce calls on this thread, each with its 2 KernelCh on
 * another thread after the Coll stopped. */
static void api_calls(int calls) {
  for (int i = 0; i < calls; i++) {
    void *ga = h1_start(g_ctx, ncclProfileGroupApi, NULL, NULL);
    void *ca = h1_start(g_ctx, ncclProfileCollApi, ga, "AllReduce");
    ncclProfiler_v5.stopEvent(ca);
    void *gr = h1_start(g_ctx, ncclProfileGroup, NULL, NULL);
    kc_args k = {h1_start_coll(g_ctx, ca, "AllReduce", 2), 2};
    ncclProfiler_v5.stopEvent(k.coll);
    ncclProfiler_v5.stopEvent(gr);
    ncclProfiler_v5.stopEvent(ga);
    pthread_t t;
    pthread_create(&t, NULL, kernel_channels, &k);
    pthread_join(t, NULL);
  }
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The numbers of the API call's paths that do not depend on host time, sorted. */
static size_t api_paths(char *out, size_t cap, uint64_t *kch_calls) {
  collprof_snapshot s;
  out[0] = 0;
  if (collprof_snapshot_take(&s) != 0) return 0;
  char *lines[64];
  size_t n = 0, len = 0;
  for (size_t i = 0; i < s.npaths && n < 64; i++) {
    const collprof_path_stat *p = &s.paths[i];
    if (strncmp(p->path, "Group", 5) != 0) continue;   /* GroupApi/... and Group */
    if (kch_calls && p->leaf_type == ncclProfileKernelCh) *kch_calls += p->calls;
    if (asprintf(&lines[n], "%s calls=%llu states=%llu bytes=%llu gpu_ns=%llu gpu_samples=%llu unterminated=%llu\n",
                 p->path, (unsigned long long)p->calls, (unsigned long long)p->states,
                 (unsigned long long)p->bytes, (unsigned long long)p->gpu_ns,
                 (unsigned long long)p->gpu_samples, (unsigned long long)p->unterminated) > 0)
      n++;
  }
  qsort(lines, n, sizeof *lines, cmp_str);
  for (size_t i = 0; i < n; i++) {
    len += (size_t)snprintf(out + len, len < cap ? cap - len : 0, "%s", lines[i]);
    free(lines[i]);
  }
  collprof_snapshot_free(&s);
  return len;
}

enum { EQ_CALLS = 3, EQ_BUF = 8192 };

/* Before the first init: the same calls inline, in a child; its numbers
 * come back through a pipe. */
static void inline_reference(char *out, size_t cap) {
  out[0] = 0;
  int fd[2];
  if (pipe(fd) != 0) return;
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    setenv("COLLPROF_PROXY_DEFER", "0", 1);
    g_ctx = h1_init(0xDEFE, 0);
    api_calls(EQ_CALLS);
    char buf[EQ_BUF];
    const size_t n = api_paths(buf, sizeof buf, NULL);
    const ssize_t w = write(fd[1], buf, n < sizeof buf ? n : sizeof buf - 1);
    _exit(w == (ssize_t)n ? 0 : 1);
  }
  close(fd[1]);
  size_t len = 0;
  ssize_t r;
  while (pid > 0 && len + 1 < cap && (r = read(fd[0], out + len, cap - 1 - len)) > 0) len += (size_t)r;
  out[len] = 0;
  close(fd[0]);
  int st = 0;
  if (pid > 0) waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) out[0] = 0;
}

static void same_as_inline(const char *inline_numbers) {
  const uint64_t bad0 = h1_bad_calls();
  api_calls(EQ_CALLS);
  char deferred[EQ_BUF];
  uint64_t kch = 0;
  api_paths(deferred, sizeof deferred, &kch);
  is_u(kch, 2 * EQ_CALLS, "inline/deferred: %d KernelCh from another thread reach the profile", 2 * EQ_CALLS);
  if (!ok(inline_numbers[0] && strcmp(deferred, inline_numbers) == 0,
          "inline/deferred: the same numbers per path as COLLPROF_PROXY_DEFER=0"))
    diag("inline:\n%s\ndeferred:\n%s", inline_numbers, deferred);
  for (const char *l = deferred; *l; l += strcspn(l, "\n") + 1) diag("  %.*s", (int)strcspn(l, "\n"), l);
  is_u(h1_bad_calls() - bad0, 0, "inline/deferred: no bad calls");
}

/* ---- trace ids, at the end ---- */

static void trace_ids(void) {
  cp_defer_flush();
  cp_trace_flush();
  char file[4096];
  cp_trace_path(file, sizeof file);
  is_u(trace_pc(file, g_old.tid, g_old.tid, 0), g_old.n, "trace: the exited thread's events under its id");
  is_u(trace_pc(file, g_new.tid, g_new.tid, 0), g_new.n,
       "trace: the events of the thread that took its ring over under the new id, start and stop");
  is_u(trace_pc(file, g_filler.tid, g_filler.tid, 0), FULL_EVENTS, "trace: the full ring's events under its thread's id");
  is_u(trace_pc(file, -1, -1, 1), 0, "trace: no ProxyCtrl record with a start and a stop thread that differ");
  is_u(core_now().trace_dropped, 0, "trace: nothing dropped");
}

int main(void) {
  setenv("COLLPROF_TRACE", "1", 1);
  setenv("COLLPROF_GPU_SAMPLE", "1", 1);
  h1_env(NULL);
  char inline_numbers[EQ_BUF];
  inline_reference(inline_numbers, sizeof inline_numbers);

  setenv("COLLPROF_PROXY_DEFER", "1", 1);
  char errf[] = "/tmp/collprof-defer-XXXXXX";
  const int efd = mkstemp(errf);
  fflush(stderr);
  const int saved = dup(2);
  dup2(efd, 2);

  g_ctx = h1_init(0xDEFE, 0);
  ok(cp_defer_on, "COLLPROF_PROXY_DEFER=1 is on");
  ring_reuse();
  ring_full();
  stale_handles();
  same_as_inline(inline_numbers);
  trace_ids();

  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(efd);
  FILE *ef = fopen(errf, "r");
  char line[600];
  while (ef && fgets(line, sizeof line, ef)) diag("stderr: %.*s", (int)strcspn(line, "\n"), line);
  if (ef) fclose(ef);
  is_u(h1_file_lines(errf, "collprof: "), h1_file_lines(errf, ""), "stderr: every line is a collprof: line");
  is_u(h1_file_lines(errf, "on a deferred proxy-thread handle that is no longer known"), 1,
       "stderr: one line for all the stale calls");
  unlink(errf);
  ncclProfiler_v5.finalize(g_ctx);
  return done_testing();
}
