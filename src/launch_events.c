/*
 * launch_events.c — the CUDA driver's event calls for the launch timer
 * (launch_events.h says what and why), through entry points taken once
 * from libcuda.so.1 at run time.
 */
#include <pthread.h>
#include <stddef.h>
#pragma GCC visibility push(hidden)
#include "launch_events.h"
#include "cuda_driver.h"

typedef int CUresult;
typedef void *CUcontext, *CUevent, *CUstream;
enum { CUDA_SUCCESS = 0, CUDA_ERROR_NOT_READY = 600 };

static struct {
  CUresult (*ctx_current)(CUcontext *);
  CUresult (*ctx_push)(CUcontext);
  CUresult (*ctx_pop)(CUcontext *);
  CUresult (*ev_create)(CUevent *, unsigned);
  CUresult (*ev_destroy)(CUevent);
  CUresult (*ev_record)(CUevent, CUstream);
  CUresult (*ev_query)(CUevent);
  CUresult (*ev_elapsed)(float *, CUevent, CUevent);
  CUresult (*capturing)(CUstream, int *);
  CUresult (*capture_mode)(int *);   /* optional: cuThreadExchangeStreamCaptureMode */
  int ok;
} cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

static void cu_load(void) {
#define SYM(f, a, b) (*(void **)&cu.f = cp_cuda_sym(a, b))
  SYM(ctx_current, "cuCtxGetCurrent", NULL);
  SYM(ctx_push, "cuCtxPushCurrent_v2", "cuCtxPushCurrent");
  SYM(ctx_pop, "cuCtxPopCurrent_v2", "cuCtxPopCurrent");
  SYM(ev_create, "cuEventCreate", NULL);
  SYM(ev_destroy, "cuEventDestroy_v2", "cuEventDestroy");
  SYM(ev_record, "cuEventRecord", NULL);
  SYM(ev_query, "cuEventQuery", NULL);
  SYM(ev_elapsed, "cuEventElapsedTime", "cuEventElapsedTime_v2");
  SYM(capturing, "cuStreamIsCapturing", NULL);
  SYM(capture_mode, "cuThreadExchangeStreamCaptureMode", NULL);
#undef SYM
  cu.ok = cu.ctx_current && cu.ctx_push && cu.ctx_pop && cu.ev_create && cu.ev_destroy && cu.ev_record &&
          cu.ev_query && cu.ev_elapsed && cu.capturing;
}

int cp_lte_load(void) {
  pthread_once(&cu_once, cu_load);
  return cu.ok;
}
int cp_lte_ok(void) { return cu.ok; }

void *cp_lte_launch_context(void *stream) {
  int status = 0;
  CUcontext ctx = NULL;
  if (cu.ctx_current(&ctx) != CUDA_SUCCESS || !ctx || cu.capturing(stream, &status) != CUDA_SUCCESS ||
      status != 0)
    return NULL;
  return ctx;
}

/* While a thread captures a CUDA graph (cudaStreamCaptureModeGlobal or
 * ThreadLocal), or another thread captures in global mode, a potentially
 * unsafe call such as cuEventQuery invalidates the application's capture:
 * NCCL's next launch into it then fails ("unhandled cuda error", seen on
 * H200 with every launch timed).  So every event call runs with this
 * thread's capture mode switched to relaxed, as NCCL does for its own
 * calls, and put back after. */
enum { CAPTURE_MODE_RELAXED = 2 };
int cp_lte_relaxed_begin(void) {
  int m = CAPTURE_MODE_RELAXED;
  return cu.capture_mode && cu.capture_mode(&m) == CUDA_SUCCESS ? m : -1;
}
void cp_lte_relaxed_end(int m) {
  if (m >= 0) cu.capture_mode(&m);
}

/* Make ctx current on this thread for an event call, pushing it only when
 * it is not: 0 already current, 1 pushed (pop with with_ctx_end), -1 failed. */
static int with_ctx_begin(CUcontext ctx) {
  CUcontext cur = NULL;
  if (cu.ctx_current(&cur) == CUDA_SUCCESS && cur == ctx) return 0;
  return cu.ctx_push(ctx) == CUDA_SUCCESS ? 1 : -1;
}
static void with_ctx_end(int pushed) {
  CUcontext dummy;
  if (pushed == 1) cu.ctx_pop(&dummy);
}

int cp_lte_pair_make(cp_lte_pair *p, void *ctx) {
  if (p->ev0 && p->ctx == ctx) return 0;
  if (p->ev0) {
    int w = with_ctx_begin(p->ctx);
    if (w >= 0) {
      cu.ev_destroy(p->ev0);
      cu.ev_destroy(p->ev1);
      with_ctx_end(w);
    }
    p->ev0 = p->ev1 = NULL;
  }
  CUevent a = NULL, b = NULL;
  if (cu.ev_create(&a, 0) != CUDA_SUCCESS) return -1;   /* CU_EVENT_DEFAULT: timing on */
  if (cu.ev_create(&b, 0) != CUDA_SUCCESS) {
    cu.ev_destroy(a);
    return -1;
  }
  p->ev0 = a;
  p->ev1 = b;
  p->ctx = ctx;
  return 0;
}

int cp_lte_record(const cp_lte_pair *p, int which, void *stream) {
  return cu.ev_record(which ? p->ev1 : p->ev0, stream) == CUDA_SUCCESS ? 0 : -1;
}

int cp_lte_start_done(const cp_lte_pair *p) { return cu.ev_query(p->ev0) == CUDA_SUCCESS; }

int cp_lte_elapsed(const cp_lte_pair *p, float *ms) {
  const int w = with_ctx_begin(p->ctx);
  CUresult q = w < 0 ? (CUresult)-1 : cu.ev_query(p->ev1);
  if (q == CUDA_SUCCESS && cu.ev_elapsed(ms, p->ev0, p->ev1) != CUDA_SUCCESS) q = (CUresult)-1;
  with_ctx_end(w);
  return q == CUDA_SUCCESS ? CP_LTE_DONE : q == CUDA_ERROR_NOT_READY ? CP_LTE_NOT_READY : CP_LTE_FAILED;
}
