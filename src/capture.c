/*
 * capture.c — capture mode (capture.h): every callback NCCL makes, written
 * in the shared/fixtures format (README there) to
 * <output folder>/capture-pid<PID>.jsonl, so a user's run replays anywhere
 * with collprof-replay.
 *
 * Field names and order follow the recorded fixtures exactly; `t` comes
 * from collprof_now_ns(), tid is the kernel thread id, pointers print as
 * "0x%llx" and NULL as "(nil)" (glibc's %p).  Strings are JSON-escaped
 * (the fixtures never needed it, but a user's comm name might).  A line is
 * formatted under one mutex into a 64 KiB buffer written with write() when
 * nearly full and at init, fini and close, so a crash loses little.
 * cp_capture_state's arg_kind: 0 no arguments, 1 transSize,
 * 2 appendedProxyOps, 3 pTimer, 4 arguments of another kind ("args":1).
 * fork: the child stops capturing and drops the parent's buffered lines
 * (the parent writes them).
 */
#include "capture.h"
#include "collprof.h"
#include "config.h"
#include "json_escape.h"
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)


static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_fd = -1;
static char g_buf[65536];
static size_t g_len;
static __thread int tl_tid;

static int tid(void) {
  if (!tl_tid) tl_tid = (int)syscall(SYS_gettid);
  return tl_tid;
}

static void flush_locked(void) {
  size_t off = 0;
  while (g_fd >= 0 && off < g_len) {
    ssize_t w = write(g_fd, g_buf + off, g_len - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      static int warned;
      if (!warned++) cp_warn("capture file: %s; capture lines lost", strerror(errno));
      break;
    }
    off += (size_t)w;
  }
  g_len = 0;
}

static void after_fork_child(void) {
  __atomic_store_n(&cp_hot.capture_on, 0, __ATOMIC_RELAXED);
  g_len = 0;
  if (g_fd >= 0) close(g_fd);
  g_fd = -1;
  tl_tid = 0;
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  memcpy(&g_mu, &fresh, sizeof fresh);
}

static void open_capture(void) {
  if (!cp_config_get()->capture) return;
  char path[4200];
  char name[64];
  snprintf(name, sizeof name, "capture-pid%d.jsonl", (int)getpid());
  cp_output_file_path(path, sizeof path, name);
  if (cp_output_mkdir() != 0 ||
      (g_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0) {
    cp_warn("cannot write the capture file %s: %s; capture off", path, strerror(errno));
    return;
  }
  pthread_atfork(NULL, NULL, after_fork_child);
  __atomic_store_n(&cp_hot.capture_on, 1, __ATOMIC_RELEASE);
}

void cp_capture_init(void) { pthread_once(&g_once, open_capture); }

/* ---- one line, built in a local buffer ---- */
typedef struct line { char b[4096]; size_t n; } line;

static void add(line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(line *l, const char *fmt, ...) {
  if (l->n >= sizeof l->b) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(l->b + l->n, sizeof l->b - l->n, fmt, ap);
  va_end(ap);
  if (k > 0) l->n += (size_t)k;
  if (l->n > sizeof l->b) l->n = sizeof l->b;
}

static void add_ptr(line *l, const char *key, uint64_t v) {
  if (v) add(l, ",\"%s\":\"0x%llx\"", key, (unsigned long long)v);
  else add(l, ",\"%s\":\"(nil)\"", key);
}

static void add_str(line *l, const char *key, const char *s) {
  add(l, ",\"%s\":\"", key);
  if (l->n + 2 < sizeof l->b) l->n += cp_json_escape_str(l->b + l->n, sizeof l->b - l->n - 2, s);
  add(l, "\"");
}

static uint64_t P(const void *p) { return (uint64_t)(uintptr_t)p; }

static void head(line *l, const char *cb) {
  l->n = 0;
  add(l, "{\"cb\":\"%s\",\"t\":%llu", cb, (unsigned long long)collprof_now_ns());
}

static void commit(line *l, int flush) {
  add(l, "}\n");
  if (l->n >= sizeof l->b) { /* cut: keep the line valid */
    l->n = 0;
    add(l, "{\"cb\":\"truncated\"}\n");
  }
  pthread_mutex_lock(&g_mu);
  if (g_fd >= 0) {
    if (g_len + l->n > sizeof g_buf) flush_locked();
    memcpy(g_buf + g_len, l->b, l->n);
    g_len += l->n;
    if (flush) flush_locked();
  }
  pthread_mutex_unlock(&g_mu);
}

void cp_capture_comm_init(uint64_t ctx, uint64_t comm_id, const char *comm_name, int nnodes,
                          int nranks, int rank, int mask_in, int mask) {
  if (!cp_hot.capture_on) return;
  line l;
  head(&l, "init");
  add(&l, ",\"pid\":%d,\"tid\":%d", (int)getpid(), tid());
  add_ptr(&l, "ctx", ctx);
  add(&l, ",\"commId\":\"%llu\"", (unsigned long long)comm_id);
  add_str(&l, "commName", comm_name);
  add(&l, ",\"nNodes\":%d,\"nranks\":%d,\"rank\":%d,\"maskIn\":%d,\"mask\":%d", nnodes, nranks,
      rank, mask_in, mask);
  commit(&l, 1);
}

void cp_capture_start(uint64_t ctx, uint64_t handle, const ncclProfilerEventDescr_v5_t *d) {
  if (!cp_hot.capture_on) return;
  line l;
  head(&l, "start");
  add(&l, ",\"tid\":%d", tid());
  add_ptr(&l, "ctx", ctx);
  add_ptr(&l, "h", handle);
  if (!d) {
    add(&l, ",\"type\":0");
    commit(&l, 0);
    return;
  }
  add(&l, ",\"type\":%llu", (unsigned long long)d->type);
  add_ptr(&l, "parent", P(d->parentObj));
  add(&l, ",\"rank\":%d", d->rank);
  switch (d->type) {
  case ncclProfileGroupApi:
    add(&l, ",\"graphCaptured\":%d,\"groupDepth\":%d", d->groupApi.graphCaptured ? 1 : 0,
        d->groupApi.groupDepth);
    break;
  case ncclProfileCollApi:
    add_str(&l, "func", d->collApi.func);
    add(&l, ",\"count\":%zu", d->collApi.count);
    add_str(&l, "datatype", d->collApi.datatype);
    add(&l, ",\"root\":%d", d->collApi.root);
    add_ptr(&l, "stream", P(d->collApi.stream));
    add(&l, ",\"graphCaptured\":%d", d->collApi.graphCaptured ? 1 : 0);
    break;
  case ncclProfileP2pApi:
    add_str(&l, "func", d->p2pApi.func);
    add(&l, ",\"count\":%zu", d->p2pApi.count);
    add_str(&l, "datatype", d->p2pApi.datatype);
    add_ptr(&l, "stream", P(d->p2pApi.stream));
    add(&l, ",\"graphCaptured\":%d", d->p2pApi.graphCaptured ? 1 : 0);
    break;
  case ncclProfileKernelLaunch:
    add_ptr(&l, "stream", P(d->kernelLaunch.stream));
    break;
  case ncclProfileColl:
    add(&l, ",\"seq\":%llu", (unsigned long long)d->coll.seqNumber);
    add_str(&l, "func", d->coll.func);
    add_ptr(&l, "sendBuff", P(d->coll.sendBuff));
    add_ptr(&l, "recvBuff", P(d->coll.recvBuff));
    add(&l, ",\"count\":%zu,\"root\":%d", d->coll.count, d->coll.root);
    add_str(&l, "datatype", d->coll.datatype);
    add(&l, ",\"nChannels\":%u,\"nWarps\":%u", d->coll.nChannels, d->coll.nWarps);
    add_str(&l, "algo", d->coll.algo);
    add_str(&l, "proto", d->coll.proto);
    add_ptr(&l, "parentGroup", P(d->coll.parentGroup));
    break;
  case ncclProfileP2p:
    add_str(&l, "func", d->p2p.func);
    add_ptr(&l, "buff", P(d->p2p.buff));
    add_str(&l, "datatype", d->p2p.datatype);
    add(&l, ",\"count\":%zu,\"peer\":%d,\"nChannels\":%u", d->p2p.count, d->p2p.peer,
        d->p2p.nChannels);
    add_ptr(&l, "parentGroup", P(d->p2p.parentGroup));
    break;
  case ncclProfileProxyOp:
    add(&l, ",\"opPid\":%d,\"channelId\":%u,\"peer\":%d,\"nSteps\":%d,\"chunkSize\":%d,\"isSend\":%d",
        (int)d->proxyOp.pid, d->proxyOp.channelId, d->proxyOp.peer, d->proxyOp.nSteps,
        d->proxyOp.chunkSize, d->proxyOp.isSend);
    break;
  case ncclProfileProxyStep:
    add(&l, ",\"step\":%d", d->proxyStep.step);
    break;
  case ncclProfileKernelCh:
    add(&l, ",\"channelId\":%u,\"pTimer\":%llu", d->kernelCh.channelId,
        (unsigned long long)d->kernelCh.pTimer);
    break;
  case ncclProfileNetPlugin:
    add(&l, ",\"id\":%lld", (long long)d->netPlugin.id);
    add_ptr(&l, "data", P(d->netPlugin.data));
    break;
  default: /* Group, ProxyCtrl: no descriptor fields */
    break;
  }
  commit(&l, 0);
}

void cp_capture_state(uint64_t handle, int state, int arg_kind, uint64_t arg) {
  if (!cp_hot.capture_on) return;
  line l;
  head(&l, "state");
  add(&l, ",\"tid\":%d", tid());
  add_ptr(&l, "h", handle);
  add(&l, ",\"state\":%d", state);
  switch (arg_kind) {
  case 1: add(&l, ",\"transSize\":%llu", (unsigned long long)arg); break;
  case 2: add(&l, ",\"appendedProxyOps\":%d", (int)arg); break;
  case 3: add(&l, ",\"pTimer\":%llu", (unsigned long long)arg); break;
  case 4: add(&l, ",\"args\":1"); break;
  default: break;
  }
  commit(&l, 0);
}

void cp_capture_stop(uint64_t handle) {
  if (!cp_hot.capture_on) return;
  line l;
  head(&l, "stop");
  add(&l, ",\"tid\":%d", tid());
  add_ptr(&l, "h", handle);
  commit(&l, 0);
}

void cp_capture_fini(uint64_t ctx) {
  if (!cp_hot.capture_on) return;
  line l;
  head(&l, "fini");
  add(&l, ",\"tid\":%d", tid());
  add_ptr(&l, "ctx", ctx);
  commit(&l, 1);
}

void cp_capture_close(void) {
  pthread_mutex_lock(&g_mu);
  if (g_fd >= 0) {
    flush_locked();
    close(g_fd);
    g_fd = -1;
  }
  /* cp_hot.capture_on stays set: callbacks still running read it without a
   * lock; their lines are dropped because the file is closed. */
  pthread_mutex_unlock(&g_mu);
}

#pragma GCC visibility pop
