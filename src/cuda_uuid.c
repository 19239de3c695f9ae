/*
 * cuda_uuid.c — GPU UUID through the driver API found at run time.
 *
 * Order: cuInit(0); cuCtxGetCurrent + cuCtxGetDevice (NCCL made the
 * communicator's device current before calling init); without a current
 * context, cuDeviceGet(0) only when exactly one device is visible (else the
 * answer would be a guess); then cuDeviceGetUuid_v2, or cuDeviceGetUuid on
 * old drivers.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#pragma GCC visibility push(hidden)
#include "cuda_uuid.h"
#include "cuda_driver.h"

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef struct { unsigned char bytes[16]; } CUuuid;

static struct {
  CUresult (*init)(unsigned);
  CUresult (*ctx_current)(CUcontext *);
  CUresult (*ctx_device)(CUdevice *);
  CUresult (*dev_get)(CUdevice *, int);
  CUresult (*dev_count)(int *);
  CUresult (*uuid)(CUuuid *, CUdevice);
  int ok;
} cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

static void cu_load(void) {
  *(void **)&cu.init = cp_cuda_sym("cuInit", NULL);
  *(void **)&cu.ctx_current = cp_cuda_sym("cuCtxGetCurrent", NULL);
  *(void **)&cu.ctx_device = cp_cuda_sym("cuCtxGetDevice", NULL);
  *(void **)&cu.dev_get = cp_cuda_sym("cuDeviceGet", NULL);
  *(void **)&cu.dev_count = cp_cuda_sym("cuDeviceGetCount", NULL);
  *(void **)&cu.uuid = cp_cuda_sym("cuDeviceGetUuid_v2", "cuDeviceGetUuid");
  cu.ok = cu.init && cu.uuid && cu.init(0) == 0;
}

int cp_cuda_uuid(char *out, size_t n) {
  if (!out || n == 0) return -1;
  out[0] = 0;
  pthread_once(&cu_once, cu_load);
  if (!cu.ok || n < 37) return -1;
  CUdevice dev = -1;
  CUcontext ctx = NULL;
  if (cu.ctx_current && cu.ctx_device && cu.ctx_current(&ctx) == 0 && ctx) {
    if (cu.ctx_device(&dev) != 0) dev = -1;
  }
  if (dev < 0) {
    int count = 0;
    if (!cu.dev_count || !cu.dev_get || cu.dev_count(&count) != 0 || count != 1 || cu.dev_get(&dev, 0) != 0)
      return -1;
  }
  CUuuid u;
  memset(&u, 0, sizeof u);
  if (cu.uuid(&u, dev) != 0) return -1;
  const unsigned char *b = u.bytes;
  snprintf(out, n, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return 0;
}
