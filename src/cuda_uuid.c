/*
 * cuda_uuid.c — GPU UUID through the driver API found at run time.
 *
 * Order: cuInit(0); cuCtxGetCurrent + cuCtxGetDevice (NCCL made the
 * communicator's device current before calling init); without a current
 * context, cuDeviceGet(0) only when exactly one device is visible (else the
 * answer would be a guess); then cuDeviceGetUuid_v2, or cuDeviceGetUuid on
 * old drivers.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#pragma GCC visibility push(hidden)
#include "cuda_uuid.h"

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
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return;
  *(void **)&cu.init = dlsym(h, "cuInit");
  *(void **)&cu.ctx_current = dlsym(h, "cuCtxGetCurrent");
  *(void **)&cu.ctx_device = dlsym(h, "cuCtxGetDevice");
  *(void **)&cu.dev_get = dlsym(h, "cuDeviceGet");
  *(void **)&cu.dev_count = dlsym(h, "cuDeviceGetCount");
  *(void **)&cu.uuid = dlsym(h, "cuDeviceGetUuid_v2");
  if (!cu.uuid) *(void **)&cu.uuid = dlsym(h, "cuDeviceGetUuid");
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
