/*
 * trace_file.c — the trace file: every write to it, under the "io lock",
 * for the writer thread's drains (trace_writer.c), the rank file's tail
 * (trace_writer.h: cp_trace_set_tail), renames and the signal-time flush.
 *
 * The io lock is a mutex for ordinary threads plus an atomic owner word
 * (the kernel tid) that the signal-time flush takes with compare-and-swap
 * only: it skips when it interrupted the holder itself, and otherwise
 * waits at most ~700 ms for another thread's write to end (a SIGTERM
 * usually leaves seconds, Open MPI's SIGKILL follows after 1 s); while it
 * waits, whoever holds the file lets go after its current block.  The
 * handler then keeps the file: the process is about to die, and a write
 * started after it would be cut short by the kill, leaving a partial last
 * line (cp_trace_resume_signal_safe gives it back if the process goes on).
 *
 * A failed or short write is cut back with ftruncate, so the file holds
 * whole lines; its records are counted as lost (full disk: one warning,
 * keep going).  An unwritable folder: one warning, the trace is off
 * (records are no longer accepted); the in-memory profile and snapshots
 * are unaffected.  The tail (path, rank and clock records) stays last:
 * a drain that has records cuts it, writes them, and writes it again.
 *
 * fork: the child closes the parent's descriptor and never writes
 * (cp_tfile_after_fork; trace_writer.c says why).
 */
#include "trace_file.h"
#include "trace.h"
#include "trace_ring.h"   /* cp_trace_accept */
#include "trace_writer.h"
#include "config.h"
#include "meta.h"
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)

static __thread int tl_tid __attribute__((tls_model("initial-exec")));

/* all below guarded by the io lock, except where atomic */
static pthread_mutex_t g_io_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_io_owner;             /* tid holding the file, 0 = free */
static int g_fd = -1;
static char g_path[4096];
static int g_opened_once, g_failed_flag;
static atomic_int g_failed;               /* readable without the lock */
static uint64_t g_off;                    /* our write position = file size */
static long g_tail_off = -1;
static char *g_tail;
static size_t g_tail_len;
static int g_disk_warned;
static _Atomic uint64_t g_lines, g_lost;

int cp_tfile_raw_tid(void) { return (int)syscall(SYS_gettid); }

int cp_tfile_tid(void) {
  if (!tl_tid) tl_tid = cp_tfile_raw_tid();
  return tl_tid;
}

void cp_tfile_nap(long ns) {
  struct timespec ts = {0, ns};
  nanosleep(&ts, NULL);
}

/* Set while a signal-time flush keeps the file (cp_trace_flush_signal_safe). */
static atomic_int g_sig_hold;
/* Set while a signal handler waits for the file: the writer stops after its
 * current block and nobody else takes the lock, so the handler gets it well
 * within Open MPI's 1 s between SIGTERM and SIGKILL. */
static atomic_int g_sig_wants;

void cp_tfile_lock(void) {
  pthread_mutex_lock(&g_io_mu);
  int me = cp_tfile_tid();
  /* Only a signal-time flush can hold it here.  It keeps the file so that
   * the kill that follows cannot cut a write short; if the process is
   * still alive after 2 s (or the handler ran on this very thread, which
   * is now going on), the signal did not end it and the file is taken
   * back. */
  for (int waited_ms = 0;; waited_ms++) {
    int z = 0;
    if (atomic_load(&g_sig_wants) && waited_ms < 2000) { cp_tfile_nap(1000000); continue; }
    if (atomic_compare_exchange_strong(&g_io_owner, &z, me)) return;
    if (atomic_load(&g_sig_hold) && (z == me || waited_ms >= 2000) &&
        atomic_compare_exchange_strong(&g_io_owner, &z, me)) {
      atomic_store(&g_sig_hold, 0);
      atomic_store(&g_sig_wants, 0);
      return;
    }
    cp_tfile_nap(1000000);
  }
}

void cp_tfile_unlock(void) {
  atomic_store(&g_io_owner, 0);
  pthread_mutex_unlock(&g_io_mu);
}

/* write() all of it; 0 or -1 (errno). */
static int write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (w == 0) { errno = ENOSPC; return -1; }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Cut the file back to `off` after a failed write, so it holds whole lines. */
static void cut_to(uint64_t off) {
  if (ftruncate(g_fd, (off_t)off) != 0) { /* nothing more we can do */ }
  lseek(g_fd, (off_t)off, SEEK_SET);
}

static void set_failed(int sig, const char *what, int err) {
  g_failed_flag = 1;
  atomic_store(&g_failed, 1);
  atomic_store(&cp_trace_accept, 0);
  if (!sig)
    cp_warn("cannot %s trace file %s: %s; trace off (the profile is kept)", what, g_path,
            strerror(err));
}

/* Open the file if needed (lock held).  Async-signal-safe when sig. */
static int ensure_open(int sig) {
  if (g_fd >= 0) return 1;
  if (g_failed_flag || !g_path[0]) return 0;
  char dir[sizeof g_path];
  memcpy(dir, g_path, sizeof dir);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) {
    *slash = 0;
    if (cp_mkdir_p(dir) != 0) { set_failed(sig, "create the folder of the", errno); return 0; }
  }
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (g_opened_once ? 0 : O_TRUNC);
  int fd = open(g_path, flags, 0644);
  if (fd < 0) { set_failed(sig, "open the", errno); return 0; }
  g_fd = fd;
  if (!g_opened_once) {
    g_opened_once = 1;
    g_off = 0;
    size_t n;
    const char *meta = cp_meta_line(&n);
    if (n && write_all(fd, meta, n) != 0) cut_to(0);
    else g_off = n;
  } else {
    off_t e = lseek(fd, 0, SEEK_END);
    g_off = e > 0 ? (uint64_t)e : 0;
  }
  return 1;
}

/* Write one formatted block of nrec records at the end (lock held). */
void cp_tfile_emit(const char *buf, size_t len, uint64_t nrec, int sig) {
  if (g_fd < 0) {
    atomic_fetch_add(&g_lost, nrec);
    return;
  }
  if (write_all(g_fd, buf, len) != 0) {
    int e = errno;
    cut_to(g_off);
    atomic_fetch_add(&g_lost, nrec);
    if (!sig && !g_disk_warned) {
      g_disk_warned = 1;
      cp_warn("cannot write to %s: %s; trace records are lost (counted in traceDropped), still trying",
              g_path, strerror(e));
    }
    return;
  }
  g_off += len;
  atomic_fetch_add(&g_lines, nrec);
}

/* Cut the file back to where its tail starts, if it has one (file open):
 * 1 when it did. */
static int cut_tail(void) {
  if (g_tail_off < 0) return 0;
  cut_to((uint64_t)g_tail_off);
  g_off = (uint64_t)g_tail_off;
  return 1;
}

int cp_tfile_records_begin(int sig, int *tail_cut) {
  if (!ensure_open(sig)) return 0;
  if (cut_tail()) *tail_cut = 1;   /* records go before the tail */
  return 1;
}

void cp_tfile_records_end(int tail_cut) {
  if (!tail_cut) return;   /* the tail goes back at the end */
  uint64_t at = g_off;
  if (g_tail && write_all(g_fd, g_tail, g_tail_len) == 0) {
    g_tail_off = (long)at;
    g_off += g_tail_len;
  } else {
    cut_to(at);
    g_tail_off = -1;
  }
}

void cp_tfile_lost(uint64_t nrec) { atomic_fetch_add(&g_lost, nrec); }
uint64_t cp_tfile_lost_count(void) { return atomic_load(&g_lost); }
uint64_t cp_trace_lines(void) { return atomic_load(&g_lines); }
int cp_trace_failed(void) { return atomic_load(&g_failed); }

long cp_tfile_append(const char *text, size_t len) {
  long at = -1;
  if (ensure_open(0)) {
    if (write_all(g_fd, text, len) == 0) {
      at = (long)g_off;
      g_off += len;
    } else {
      cut_to(g_off);
    }
  }
  return at;
}

long cp_tfile_set_tail(char *copy, size_t len) {
  long at = -1;
  if (ensure_open(0)) {
    cut_tail();   /* the new tail replaces the old */
    if (write_all(g_fd, copy, len) == 0) {
      at = (long)g_off;
      g_off += len;
      free(g_tail);
      g_tail = copy;
      copy = NULL;
      g_tail_len = len;
      g_tail_off = at;
    } else {
      cut_to(g_off);
      g_tail_off = -1;
    }
  }
  free(copy);
  return at;
}

void cp_tfile_close(void) {
  if (g_fd >= 0) close(g_fd);
  g_fd = -1;        /* later tail writes reopen it without truncating */
}

void cp_tfile_name_from_output(void) {
  cp_tfile_lock();
  cp_output_trace_path(g_path, sizeof g_path);
  cp_tfile_unlock();
}

void cp_tfile_after_fork(void) {
  tl_tid = 0;
  /* The parent's descriptor and lock state are not ours to use. */
  if (g_fd >= 0) close(g_fd);
  g_fd = -1;
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  memcpy(&g_io_mu, &fresh, sizeof fresh);
  atomic_store(&g_io_owner, 0);
}

void cp_trace_path(char *buf, size_t cap) {
  if (!cap) return;
  if (cp_trace_in_fork_child()) { buf[0] = 0; return; }
  cp_tfile_lock();
  snprintf(buf, cap, "%s", g_path);
  cp_tfile_unlock();
}

/* Copy src to dst (rename across file systems). */
static int copy_file(const char *src, const char *dst) {
  int in = open(src, O_RDONLY | O_CLOEXEC);
  if (in < 0) return -1;
  int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) { close(in); return -1; }
  char buf[65536];
  ssize_t n;
  int rc = 0;
  while ((n = read(in, buf, sizeof buf)) > 0)
    if (write_all(out, buf, (size_t)n) != 0) { rc = -1; break; }
  if (n < 0) rc = -1;
  close(in);
  if (close(out) != 0) rc = -1;
  return rc;
}

int cp_trace_rename(const char *new_path) {
  if (!new_path || !*new_path || strlen(new_path) >= sizeof g_path) return -1;
  if (cp_trace_in_fork_child()) return -1;
  int rc = 0;
  cp_tfile_lock();
  if (strcmp(new_path, g_path) == 0) goto out;
  if (!g_opened_once) {
    /* Nothing on disk yet.  A new folder deserves a new try (rank 0's may
     * be writable where ours was not); the same folder does not. */
    const char *a = strrchr(g_path, '/'), *b = strrchr(new_path, '/');
    size_t la = a ? (size_t)(a - g_path) : 0, lb = b ? (size_t)(b - new_path) : 0;
    int same_dir = la == lb && strncmp(g_path, new_path, la) == 0;
    snprintf(g_path, sizeof g_path, "%s", new_path);
    if (g_failed_flag && !same_dir) {
      g_failed_flag = 0;
      atomic_store(&g_failed, 0);
      if (cp_trace_started() && cp_config_get()->trace_on) atomic_store(&cp_trace_accept, 1);
    }
    goto out;
  }
  char dir[sizeof g_path];
  snprintf(dir, sizeof dir, "%s", new_path);
  char *slash = strrchr(dir, '/');
  if (slash && slash != dir) {
    *slash = 0;
    if (cp_mkdir_p(dir) != 0) {
      cp_warn("cannot create %s: %s; the trace stays in %s", dir, strerror(errno), g_path);
      rc = -1;
      goto out;
    }
  }
  if (rename(g_path, new_path) != 0) {
    if (errno != EXDEV || copy_file(g_path, new_path) != 0) {
      cp_warn("cannot move %s to %s: %s; the trace stays there", g_path, new_path, strerror(errno));
      unlink(new_path);
      rc = -1;
      goto out;
    }
    unlink(g_path);
    if (g_fd >= 0) {   /* the copy is the file now */
      close(g_fd);
      g_fd = -1;
    }
  }
  snprintf(g_path, sizeof g_path, "%s", new_path);
out:
  cp_tfile_unlock();
  return rc;
}

int cp_trace_truncate(long offset) {
  if (offset < 0 || cp_trace_in_fork_child()) return -1;
  int rc = -1;
  cp_tfile_lock();
  if (ensure_open(0) && ftruncate(g_fd, offset) == 0) {
    lseek(g_fd, offset, SEEK_SET);
    g_off = (uint64_t)offset;
    if (g_tail_off >= offset) {
      g_tail_off = -1;
      free(g_tail);
      g_tail = NULL;
      g_tail_len = 0;
    }
    rc = 0;
  }
  cp_tfile_unlock();
  return rc;
}

int cp_tfile_signal_waits(void) { return atomic_load(&g_sig_wants); }

int cp_tfile_signal_take(void) {
  int me = cp_tfile_raw_tid();
  atomic_store(&g_sig_wants, 1);
  for (int i = 0; i < 700; i++) {
    int z = 0;
    if (atomic_compare_exchange_strong(&g_io_owner, &z, me)) return 1;   /* g_sig_wants stays */
    if (z == me) break;
    cp_tfile_nap(1000000);
  }
  atomic_store(&g_sig_wants, 0);
  return 0;
}

void cp_tfile_signal_keep(void) { atomic_store(&g_sig_hold, 1); }

void cp_trace_resume_signal_safe(void) {
  int me = cp_tfile_raw_tid();
  if (atomic_load(&g_sig_hold) && atomic_compare_exchange_strong(&g_io_owner, &me, 0))
    atomic_store(&g_sig_hold, 0);
  atomic_store(&g_sig_wants, 0);
}


#pragma GCC visibility pop
