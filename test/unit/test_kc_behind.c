/*
 * test_kc_behind.c — what the user is told when NCCL's proxy thread falls
 * behind the GPU with KernelCh on every call (src/affinity.c).
 *
 * A KernelCh whose stop comes after 32 or more later KernelCh-on calls
 * started (sometimes from 25: below) has its GPU times dropped (NCCL's timestamp slot may have been
 * rewritten: parent_link.h, CP_KC_SLOT_TRUST).  With COLLPROF_GPU_SAMPLE=1 on
 * 2 H200s that happened in every run, and NCCL's own speed depends on its
 * proxy thread then, so the first such drop prints one line saying so and
 * what avoids it; later drops are only counted.  A process bound to one CPU gets the affinity
 * advice instead (its cause there).  Each case runs in a forked child with
 * its stderr in a file (the configuration and affinity are read once per
 * process).
 *
 * The count of later starts is read from kc_ops, which the application
 * thread publishes once in CP_KC_OPS_BATCH (8) starts (pool.h says why):
 * the rule allows for the lag, so a sample goes at 25-32 later starts,
 * never after 32.  Here the two late Colls are starts 1 and 2: with 29
 * more (31 in all, kc_ops published at 24) both stay, with 30 (32 in all,
 * published at 32) both go, the first at 31 later starts.
 */
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tap.h"
#include "h1_util.h"
#include "pool.h"
#include "registry.h"

static const char *BEHIND = "fell more than 24 calls behind the GPU";
static const char *ONE_CPU = "may run on 1 CPU only";

/* One API call of one channel; *coll gets its Coll (stopped). */
static void api_call(void *ctx, void **coll) {
  void *g = h1_start(ctx, ncclProfileGroupApi, NULL, NULL);
  void *a = h1_start(ctx, ncclProfileCollApi, g, "AllReduce");
  *coll = h1_start_coll(ctx, a, "AllReduce", 1);
  ncclProfiler_v5.stopEvent(*coll);
  ncclProfiler_v5.stopEvent(a);
  ncclProfiler_v5.stopEvent(g);
}

/* In a child: sample every N-th call, optionally on one CPU; two KernelCh
 * stopped after `later` later calls (dropped when more than 32), the calls
 * between them timed at once (all kept).  Exit status: dropped spans. */
static void child(const char *sample, int one_cpu, int later, const char *errfile) {
  if (one_cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) _exit(200);
  }
  FILE *e = freopen(errfile, "w", stderr);
  if (!e) _exit(201);
  setvbuf(stderr, NULL, _IONBF, 0);
  h1_env("64");
  setenv("COLLPROF_GPU_SAMPLE", sample, 1);
  void *ctx = h1_init(9100, 0);
  void *late[2];
  for (int k = 0; k < 2; k++) {
    void *coll;
    api_call(ctx, &coll);
    late[k] = h1_start_kch(ctx, coll, 1000);
  }
  for (int i = 0; i < later; i++) {
    void *coll;
    api_call(ctx, &coll);
    h1_kch_stop(h1_start_kch(ctx, coll, 2000 + 10 * (uint64_t)i), 2005 + 10 * (uint64_t)i);
  }
  h1_kch_stop(late[0], 1500);
  h1_kch_stop(late[1], 1600);
  ncclProfiler_v5.finalize(ctx);   /* accounts the Colls' spans (pool.c) */
  collprof_snapshot s;
  memset(&s, 0, sizeof s);
  if (collprof_snapshot_take(&s) != 0) _exit(202);
  const int dropped = (int)s.gpu_samples_dropped;
  collprof_snapshot_free(&s);
  _exit(dropped & 0xff);
}

/* In a child: n sampled calls; exit status kc_ops as published (low 7
 * bits), plus 128 when the holder's own count is n. */
static void child_published(int n) {
  h1_env("64");
  setenv("COLLPROF_GPU_SAMPLE", "1", 1);
  void *ctx = h1_init(9101, 0);
  for (int i = 0; i < n; i++) {
    void *coll;
    api_call(ctx, &coll);
  }
  const cp_comm *c = cp_registry_from_ctx((uint64_t)(uintptr_t)ctx);
  const cp_pool *p = c ? cp_registry_lane(c->index, 0) : NULL;
  if (!p) _exit(255);
  const int published = (int)(__atomic_load_n(&p->kc_ops, __ATOMIC_RELAXED) & 0x7f);
  _exit(published + (p->kc_ops_own == (uint64_t)n ? 128 : 0));
}

static int run_published(int n) {
  fflush(NULL);
  const pid_t pid = fork();
  if (pid == 0) child_published(n);
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
  return WEXITSTATUS(st);
}

static int run(const char *sample, int one_cpu, int later, const char *errfile) {
  fflush(NULL);
  const pid_t pid = fork();
  if (pid == 0) child(sample, one_cpu, later, errfile);
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st)) return -1;
  return WEXITSTATUS(st);
}

static void show(const char *errfile) {
  FILE *f = fopen(errfile, "r");
  char line[1024];
  while (f && fgets(line, sizeof line, f)) diag("stderr: %.*s", (int)strcspn(line, "\n"), line);
  if (f) fclose(f);
}

int main(void) {
  char errfile[] = "/tmp/collprof-behind-XXXXXX";
  const int fd = mkstemp(errfile);
  if (fd >= 0) close(fd);

  /* every call sampled, several CPUs */
  cpu_set_t mine;
  const int many = sched_getaffinity(0, sizeof mine, &mine) == 0 && CPU_COUNT(&mine) > 1;
  if (many) {
    is_u(run("1", 0, 20, errfile), 0, "N = 1, stopped 20 calls late: nothing dropped");
    is_u(h1_file_lines(errfile, "collprof: "), 0, "...and nothing said");
    is_u(run("1", 0, 29, errfile), 0, "N = 1, 30 and 29 later starts (kc_ops published at 24): both kept");
    is_u(run("1", 0, 30, errfile), 2, "N = 1, 31 and 30 later starts (published at 32): both dropped");
    is_u(run("1", 0, 40, errfile), 2, "N = 1: both late KernelCh dropped, none of the 40 timed at once");
    show(errfile);
    is_u(h1_file_lines(errfile, BEHIND), 1, "N = 1: one line says NCCL's proxy fell behind (the second drop is only counted)");
    is_u(h1_file_lines(errfile, "COLLPROF_GPU_SAMPLE=16"), 1, "...and names what avoids it");
    is_u(h1_file_lines(errfile, "collprof: "), h1_file_lines(errfile, ""), "every stderr line is a collprof: line");
  } else {
    for (int i = 0; i < 6; i++) ok(1, "# SKIP this process may run on one CPU only");
  }

  /* kc_ops published once in 8 starts, the holder's own count exact */
  is_u(run_published(10), 128 + 8, "10 KernelCh-on Colls: kc_ops published at 8, the holder's count 10");
  is_u(run_published(16), 128 + 16, "16: published at 16");
  is_u(run_published(7), 128 + 0, "7: not published yet (0)");

  /* the same on one CPU: the affinity advice, not the proxy line */
  is_u(run("1", 1, 40, errfile), 2, "one CPU: the same two dropped");
  show(errfile);
  is_u(h1_file_lines(errfile, ONE_CPU), 1, "one CPU: the affinity advice, once");
  is_u(h1_file_lines(errfile, BEHIND), 0, "one CPU: not the proxy line");
  unlink(errfile);
  return done_testing();
}
