/*
 * cuda_driver.h — the CUDA driver, reached at run time.
 *
 * The plugin links nothing but libc and xxHash, so it builds and loads on
 * machines without CUDA; the files that call the driver (cuda_uuid.c,
 * launch_events.c) take its entry points from here.  The library is opened
 * once per process with dlopen and never closed.
 */
#ifndef COLLPROF_CUDA_DRIVER_H
#define COLLPROF_CUDA_DRIVER_H

/* The driver's symbol name, or fallback when name is missing (older or
 * newer versioned names; NULL for none).  NULL when there is no
 * libcuda.so.1 or neither name is in it.  Thread-safe; never call it from
 * an event callback (the first call runs dlopen). */
void *cp_cuda_sym(const char *name, const char *fallback);

#endif
