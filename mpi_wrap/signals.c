/*
 * signals.c — a job killed with SIGTERM/SIGINT (mpirun aborting) still
 * leaves whole lines on disk: the handler asks the plugin to write what
 * its buffers hold with async-signal-safe writes
 * (collprof_flush_signal_safe), then hands the signal on to whatever
 * handler was there before (or the default action).  No MPI, no malloc,
 * no stdio in the handler.
 *
 * collprof_flush_signal_safe is looked up at install time (dlsym), so this
 * library still loads against a plugin that does not export it yet.
 */
#include "mpi_layer.h"
#include <dlfcn.h>
#include <signal.h>
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void (*g_flush)(void);
static void (*g_resume)(void);
static struct sigaction g_old_term, g_old_int;
static volatile sig_atomic_t g_in_handler;
static struct timespec g_sig_time;        /* when the first signal came */
#define DEATH_DELAY_NS 500000000L

/* The process goes on after all (the signal was ignored or an earlier
 * handler returned): let the trace writer have its file back. */
static void went_on(void) {
  if (g_resume) g_resume();
  g_in_handler = 0;
}

static void handler(int sig, siginfo_t *si, void *uc) {
  if (!g_in_handler) {
    g_in_handler = 1;
    clock_gettime(CLOCK_MONOTONIC, &g_sig_time);
    if (g_flush) g_flush();
  }
  struct sigaction *old = sig == SIGTERM ? &g_old_term : &g_old_int;
  if (old->sa_flags & SA_SIGINFO) {
    if (old->sa_sigaction) { old->sa_sigaction(sig, si, uc); went_on(); return; }
  } else if (old->sa_handler == SIG_IGN) {
    went_on();
    return;
  } else if (old->sa_handler != SIG_DFL && old->sa_handler) {
    old->sa_handler(sig);
    went_on();
    return;
  }
  /* Default action: die, but not before the other ranks had time to
   * flush too.  mpirun sends SIGTERM to every rank at once and SIGKILLs
   * the rest as soon as one rank dies: a rank that died right after its
   * own flush would cut its peers' flushes short (seen with Open MPI 4.1).
   * So wait until DEATH_DELAY_NS after the signal came (under Open MPI's
   * own 1 s SIGTERM-to-SIGKILL grace), then restore the default action and
   * re-raise (delivered when we return); the trace file stays locked until
   * the process is gone. */
  struct timespec until = g_sig_time;
  until.tv_nsec += DEATH_DELAY_NS;
  until.tv_sec += until.tv_nsec / 1000000000L;
  until.tv_nsec %= 1000000000L;
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {}
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, NULL);
  raise(sig);
}

void cp_signals_install(void) {
  static int done;
  if (done) return;
  done = 1;
  g_flush = (void (*)(void))dlsym(RTLD_DEFAULT, "collprof_flush_signal_safe");
  g_resume = (void (*)(void))dlsym(RTLD_DEFAULT, "collprof_resume_after_signal");
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, &g_old_term);
  sigaction(SIGINT, &sa, &g_old_int);
}
