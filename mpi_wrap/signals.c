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
#include <string.h>
#include <unistd.h>

static void (*g_flush)(void);
static struct sigaction g_old_term, g_old_int;
static volatile sig_atomic_t g_in_handler;

static void handler(int sig, siginfo_t *si, void *uc) {
  if (!g_in_handler) {
    g_in_handler = 1;
    if (g_flush) g_flush();
  }
  struct sigaction *old = sig == SIGTERM ? &g_old_term : &g_old_int;
  if (old->sa_flags & SA_SIGINFO) {
    if (old->sa_sigaction) { old->sa_sigaction(sig, si, uc); return; }
  } else if (old->sa_handler == SIG_IGN) {
    return;
  } else if (old->sa_handler != SIG_DFL && old->sa_handler) {
    old->sa_handler(sig);
    return;
  }
  /* default action: restore it and re-raise (delivered when we return) */
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
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, &g_old_term);
  sigaction(SIGINT, &sa, &g_old_int);
}
