/*
 * output.c — the output folder and trace file names (see output.h), plus
 * the process-wide flags the writing code shares (MPI-managed, shut down).
 *
 * Folder strings are immutable once published (a new string is allocated
 * when rank 0's folder replaces ours; the old one is kept), so a pointer
 * from cp_output_dir() never changes under a reader, including the trace
 * writer thread and the signal-time flush.
 */
#include "output.h"
#include "config.h"
#include "output_hooks.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)

static _Atomic(const char *) g_dir;        /* NULL: the config's folder */
static const char *g_abandoned;
static atomic_int g_rank = -1, g_size = 0;
static atomic_int g_mpi_managed, g_shut_down;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

const char *cp_output_dir(void) {
  const char *d = atomic_load_explicit(&g_dir, memory_order_acquire);
  return d ? d : cp_config_get()->output_dir;
}

int cp_mkdir_p(const char *path) {
  char buf[4096];
  size_t n = 0;
  while (path[n] && n < sizeof buf - 1) { buf[n] = path[n]; n++; }
  if (path[n]) { errno = ENAMETOOLONG; return -1; }
  buf[n] = 0;
  while (n > 1 && buf[n - 1] == '/') buf[--n] = 0;
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] != '/' && buf[i] != 0) continue;
    char c = buf[i];
    buf[i] = 0;
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) { buf[i] = c; return -1; }
    buf[i] = c;
  }
  struct stat st;
  if (stat(buf, &st) != 0) return -1;
  if (!S_ISDIR(st.st_mode)) { errno = ENOTDIR; return -1; }
  return 0;
}

int cp_output_mkdir(void) { return cp_mkdir_p(cp_output_dir()); }

void cp_output_trace_path(char *buf, size_t cap) {
  int r = atomic_load(&g_rank);
  if (r >= 0) snprintf(buf, cap, "%s/rank%d.jsonl", cp_output_dir(), r);
  else snprintf(buf, cap, "%s/pid%d.jsonl", cp_output_dir(), (int)getpid());
}

void cp_output_file_path(char *buf, size_t cap, const char *name) {
  snprintf(buf, cap, "%s/%s", cp_output_dir(), name);
}

int cp_output_set_identity(int world_rank, int world_size, const char *dir) {
  int changed = 0;
  pthread_mutex_lock(&g_mu);
  atomic_store(&g_rank, world_rank >= 0 ? world_rank : -1);
  atomic_store(&g_size, world_size > 0 ? world_size : 0);
  const char *cur = cp_output_dir();
  if (dir && *dir && strcmp(dir, cur) != 0) {
    char *copy = strdup(dir);
    if (!copy) {
      cp_warn("out of memory for the output folder name; keeping %s", cur);
    } else {
      /* Our own folder is left behind; only one we invented may be removed. */
      if (!cp_config_get()->output_dir_from_env) g_abandoned = cur;
      atomic_store_explicit(&g_dir, copy, memory_order_release);
      changed = 1;
    }
  }
  pthread_mutex_unlock(&g_mu);
  return changed;
}

const char *cp_output_abandoned_dir(void) {
  pthread_mutex_lock(&g_mu);
  const char *d = g_abandoned;
  pthread_mutex_unlock(&g_mu);
  return d;
}

int cp_output_world_rank(void) { return atomic_load(&g_rank); }

/* output_hooks.h: what snapshot.c reads for collprof_snapshot. */
void cp_output_get_identity(int *world_rank, int *world_size) {
  if (world_rank) *world_rank = atomic_load(&g_rank);
  if (world_size) *world_size = atomic_load(&g_size);
}
int cp_output_world_size(void) { return atomic_load(&g_size); }
void cp_output_set_mpi_managed(int on) { atomic_store(&g_mpi_managed, on ? 1 : 0); }
int cp_output_mpi_managed(void) { return atomic_load(&g_mpi_managed); }
int cp_output_is_shut_down(void) { return atomic_load_explicit(&g_shut_down, memory_order_relaxed); }
void cp_output_mark_shut_down(void) { atomic_store(&g_shut_down, 1); }

#pragma GCC visibility pop
