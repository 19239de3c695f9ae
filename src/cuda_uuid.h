/*
 * cuda_uuid.h — the UUID of the GPU a communicator runs on, read from the
 * CUDA driver at run time (dlopen "libcuda.so.1"; collprof never links
 * CUDA), so the same library works on machines without a GPU.
 */
#ifndef COLLPROF_CUDA_UUID_H
#define COLLPROF_CUDA_UUID_H
#include <stddef.h>

/* Write "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (lowercase) for the device of
 * the calling thread's current CUDA context (or the only device there is)
 * into out (at least 37 bytes); "" when there is no driver or no device.
 * Returns 0 on success.  Not for the hot path (called at init). */
int cp_cuda_uuid(char *out, size_t n);

#endif
