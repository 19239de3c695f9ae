/*
 * fake_cuda.c — a stand-in libcuda.so.1 for CPU tests of the launch timer
 * (src/launch_timer.h): the driver calls it makes, with a clock the test
 * knows.
 *
 * Each cuEventRecord on a stream advances that stream's clock by
 * FAKECUDA_STEP_NS (default 1000) and stamps the event with it, so two
 * events around one launch are exactly one step apart and anything else
 * (the wrong event, a stale one, another stream's) is not.  The stream is
 * busy: an event completes once a later event was recorded on its stream
 * (the kernel after it ran) or 20 ms after its record, and not before
 * FAKECUDA_READY_MS (default 0), by the host clock, so tests can keep
 * launches in flight; FAKECUDA_IDLE=1 makes every stream idle (an event
 * completes at once), as when the host cannot keep the GPU fed.  cuStreamIsCapturing says
 * "active" for the stream FAKECUDA_CAPTURE_STREAM (hex, as in the
 * captures), from its FAKECUDA_CAPTURE_AFTER-th query on (default 1: from
 * the first).  FAKECUDA_FAIL_RECORD=N makes every N-th cuEventRecord fail.
 * Counts of calls go to stderr at exit when FAKECUDA_VERBOSE is set.
 *
 * Stream capture rules, as the driver applies them: a thread that was told
 * "active" is inside a capture from then on, and there, unless it switched
 * itself to relaxed mode (cuThreadExchangeStreamCaptureMode), a potentially
 * unsafe call (cuEventQuery, cuEventElapsedTime) fails with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the application's
 * capture: said once on stderr ("fakecuda: ... during stream capture").
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int CUresult;
enum { OK = 0, INVALID_VALUE = 1, INVALID_HANDLE = 400, NOT_READY = 600, CAPTURE_UNSUPPORTED = 900 };
enum { MODE_GLOBAL = 0, MODE_THREAD_LOCAL = 1, MODE_RELAXED = 2 };

typedef struct fevent { int recorded, stream; uint64_t t, ready_at, settled_at, seq; } fevent;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct { uintptr_t stream; uint64_t clock, nrec; } streams[64];
static unsigned long records, creates, capture_queries, unsafe;
static __thread int in_capture, mode = MODE_GLOBAL;

static uint64_t env_u64(const char *n, uint64_t d, int base) {
  const char *v = getenv(n);
  return v && *v ? strtoull(v, NULL, base) : d;
}
static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

CUresult cuInit(unsigned flags) { (void)flags; return OK; }
CUresult cuCtxGetCurrent(void **ctx) { *ctx = (void *)0xC0; return OK; }
CUresult cuCtxPushCurrent_v2(void *ctx) { (void)ctx; return OK; }
CUresult cuCtxPopCurrent_v2(void **ctx) { *ctx = (void *)0xC0; return OK; }

CUresult cuStreamIsCapturing(void *stream, int *status) {
  uintptr_t cap = (uintptr_t)env_u64("FAKECUDA_CAPTURE_STREAM", 0, 16);
  *status = 0;
  if (cap && (uintptr_t)stream == cap) {
    pthread_mutex_lock(&mu);
    *status = ++capture_queries >= env_u64("FAKECUDA_CAPTURE_AFTER", 1, 10);
    pthread_mutex_unlock(&mu);
  }
  if (*status) in_capture = 1;
  return OK;
}

CUresult cuThreadExchangeStreamCaptureMode(int *m) {
  if (!m || *m < MODE_GLOBAL || *m > MODE_RELAXED) return INVALID_VALUE;
  int old = mode;
  mode = *m;
  *m = old;
  return OK;
}

/* A potentially unsafe call: refused inside a capture unless relaxed. */
static int unsafe_call(const char *what) {
  if (!in_capture || mode == MODE_RELAXED) return 0;
  pthread_mutex_lock(&mu);
  if (!unsafe++)
    fprintf(stderr, "fakecuda: %s during stream capture (mode %d): the capture is invalidated\n", what, mode);
  pthread_mutex_unlock(&mu);
  return 1;
}

CUresult cuEventCreate(void **ev, unsigned flags) {
  (void)flags;
  fevent *e = calloc(1, sizeof *e);
  if (!e) return INVALID_VALUE;
  pthread_mutex_lock(&mu);
  creates++;
  pthread_mutex_unlock(&mu);
  *ev = e;
  return OK;
}
CUresult cuEventDestroy_v2(void *ev) { free(ev); return OK; }

CUresult cuEventRecord(void *ev, void *stream) {
  fevent *e = ev;
  if (!e) return INVALID_HANDLE;
  uint64_t fail = env_u64("FAKECUDA_FAIL_RECORD", 0, 10);
  pthread_mutex_lock(&mu);
  records++;
  if (fail && records % fail == 0) {
    pthread_mutex_unlock(&mu);
    return INVALID_VALUE;
  }
  unsigned i = 0;
  while (i < 64 && streams[i].stream && streams[i].stream != (uintptr_t)stream) i++;
  if (i == 64) i = 63;
  streams[i].stream = (uintptr_t)stream;
  streams[i].clock += env_u64("FAKECUDA_STEP_NS", 1000, 10);
  e->t = streams[i].clock;
  e->stream = (int)i;
  e->seq = ++streams[i].nrec;
  pthread_mutex_unlock(&mu);
  const uint64_t now = now_ns();
  e->ready_at = now + env_u64("FAKECUDA_READY_MS", 0, 10) * 1000000u;
  e->settled_at = env_u64("FAKECUDA_IDLE", 0, 10) ? now : now + 20000000u;
  e->recorded = 1;
  return OK;
}

/* Has the GPU passed this event? */
static int done(const fevent *e) {
  const uint64_t now = now_ns();
  if (now < e->ready_at) return 0;
  if (now >= e->settled_at) return 1;
  pthread_mutex_lock(&mu);
  const int later = streams[e->stream].nrec > e->seq;
  pthread_mutex_unlock(&mu);
  return later;
}

CUresult cuEventQuery(void *ev) {
  fevent *e = ev;
  if (!e) return INVALID_HANDLE;
  if (unsafe_call("cuEventQuery")) return CAPTURE_UNSUPPORTED;
  return !e->recorded || done(e) ? OK : NOT_READY;
}

CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
  fevent *x = a, *y = b;
  if (!x || !y || !x->recorded || !y->recorded) return INVALID_HANDLE;
  if (unsafe_call("cuEventElapsedTime")) return CAPTURE_UNSUPPORTED;
  if (!done(x) || !done(y)) return NOT_READY;
  *ms = (float)((double)((int64_t)(y->t - x->t)) / 1e6);
  return OK;
}

__attribute__((destructor)) static void report(void) {
  if (getenv("FAKECUDA_VERBOSE"))
    fprintf(stderr, "fakecuda: %lu event records, %lu events created\n", records, creates);
}
