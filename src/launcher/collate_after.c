/*
 * collate_after.c — starting the program: exec in place, or (collprof
 * --collate) as a child whose output folder is collated when it ends.
 *
 * Without MPI nothing collates at the end of a run: each process writes
 * its own file at exit.  A launcher that wraps the whole job (collprof
 * --collate -o DIR -- torchrun ... train.py: every worker inherits the
 * profiler's variables) outlives every process that writes into DIR, so
 * it can run collprof-collate there and leave the summary, the HTML report
 * and the message-size table, as an MPI job has at MPI_Finalize.  That
 * costs one waiting process; the default stays an exec.
 */
#include "collate_after.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void cp_exec_program(const char *path, char **argv) {
  execv(path, argv);
  const int e = errno;
  if (e == ENOEXEC) {   /* a script without #!: run it with sh, as execvp does */
    int n = 0;
    while (argv[n]) n++;
    char **av = calloc((size_t)n + 2, sizeof *av);
    if (av) {
      av[0] = "/bin/sh";
      av[1] = (char *)path;
      for (int i = 1; i < n; i++) av[i + 1] = argv[i];
      execv("/bin/sh", av);
      free(av);
    }
  }
  errno = e;
}

static volatile sig_atomic_t g_child;

/* SIGINT and SIGQUIT typed at a terminal (si_code SI_KERNEL) reach the
 * whole foreground process group, the program included: passing them on
 * would deliver them twice.  Sent to the launcher alone (kill, timeout,
 * a batch system: SI_USER or SI_QUEUE), they are passed on like the rest. */
static void forward(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  if ((sig == SIGINT || sig == SIGQUIT) && si && si->si_code == SI_KERNEL) return;
  if (g_child > 0) kill((pid_t)g_child, sig);
}

/* <folder of this executable>/collprof-collate into out; -1 if unknown. */
static int collate_tool(char *out, size_t n) {
  char exe[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (k <= 0) return -1;
  exe[k] = 0;
  char *slash = strrchr(exe, '/');
  if (!slash) return -1;
  *slash = 0;
  if ((size_t)snprintf(out, n, "%s/collprof-collate", exe) >= n) return -1;
  return access(out, X_OK);
}

static void collate(const char *prog, const char *dir, const char *preload_before, int quiet) {
  char tool[PATH_MAX + 32], html[PATH_MAX + 32], sizes[PATH_MAX + 32];
  if (collate_tool(tool, sizeof tool) != 0) {
    fprintf(stderr, "%s: --collate: no collprof-collate next to the launcher; run it on %s yourself\n", prog, dir);
    return;
  }
  if (access(dir, F_OK) != 0) {
    fprintf(stderr, "%s: --collate: %s was not made: no process of the run profiled NCCL; nothing to collate\n",
            prog, dir);
    return;
  }
  snprintf(html, sizeof html, "%s/report.html", dir);
  snprintf(sizes, sizeof sizes, "%s/sizes.txt", dir);
  const pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "%s: --collate: cannot start collprof-collate: %s\n", prog, strerror(errno));
    return;
  }
  if (pid == 0) {
    /* the profiler is not loaded into the collation (it would add a file) */
    if (preload_before && *preload_before) setenv("LD_PRELOAD", preload_before, 1);
    else unsetenv("LD_PRELOAD");
    unsetenv("NCCL_PROFILER_PLUGIN");
    char *av[8];
    int n = 0;
    av[n++] = tool;
    if (quiet) av[n++] = "-q";
    av[n++] = (char *)dir;
    av[n++] = "--html";
    av[n++] = html;
    av[n++] = "--sizes";
    av[n++] = sizes;
    av[n] = NULL;
    execv(tool, av);
    fprintf(stderr, "%s: --collate: %s: %s\n", prog, tool, strerror(errno));
    _exit(127);
  }
  int st = 0;
  pid_t w;
  while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR) {}
  if (w < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
    fprintf(stderr, "%s: --collate: collprof-collate %s did not succeed (see above)\n", prog, dir);
  else if (!quiet)
    fprintf(stderr, "%s: report in %s/report.html, message sizes in %s/sizes.txt\n", prog, dir, dir);
}

int cp_run_then_collate(const char *prog, const char *path, char **argv, const char *dir,
                        const char *preload_before, int quiet) {
  enum { NSIG_FWD = 6 };
  static const int fwd[NSIG_FWD] = {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2, SIGINT, SIGQUIT};
  struct sigaction fw, old[NSIG_FWD];
  memset(&fw, 0, sizeof fw);
  fw.sa_sigaction = forward;
  fw.sa_flags = SA_SIGINFO;
  sigemptyset(&fw.sa_mask);
  /* children must be waited for: a SIGCHLD ignored by whoever started
   * us (inherited across exec) would have them reaped unseen */
  signal(SIGCHLD, SIG_DFL);
  /* The forwarded signals are blocked from before the fork until the
   * child's pid is known: one sent meanwhile waits, then goes on to it. */
  sigset_t block, before;
  sigemptyset(&block);
  for (int i = 0; i < NSIG_FWD; i++) sigaddset(&block, fwd[i]);
  sigprocmask(SIG_BLOCK, &block, &before);
  for (int i = 0; i < NSIG_FWD; i++) sigaction(fwd[i], &fw, &old[i]);
  const pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "%s: cannot start %s: %s\n", prog, path, strerror(errno));
    for (int i = 0; i < NSIG_FWD; i++) sigaction(fwd[i], &old[i], NULL);
    sigprocmask(SIG_SETMASK, &before, NULL);
    return 126;
  }
  if (pid == 0) {
    for (int i = 0; i < NSIG_FWD; i++) sigaction(fwd[i], &old[i], NULL);
    sigprocmask(SIG_SETMASK, &before, NULL);
    cp_exec_program(path, argv);
    const int e = errno;
    fprintf(stderr, "%s: %s: %s\n", prog, argv[0], strerror(e));
    _exit(e == ENOENT ? 127 : 126);
  }
  g_child = pid;
  sigprocmask(SIG_SETMASK, &before, NULL);
  int st = 0;
  pid_t w;
  while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR) {}
  const int we = errno;
  g_child = 0;
  for (int i = 0; i < NSIG_FWD; i++) sigaction(fwd[i], &old[i], NULL);   /* the collation may be interrupted */
  const int rc = w < 0 ? 1 : WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
  if (w < 0) fprintf(stderr, "%s: cannot wait for %s: %s\n", prog, path, strerror(we));
  collate(prog, dir, preload_before, quiet);
  return rc;
}
