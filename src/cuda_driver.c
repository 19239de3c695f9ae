/*
 * cuda_driver.c — opens libcuda.so.1 once (cuda_driver.h says why).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#pragma GCC visibility push(hidden)
#include "cuda_driver.h"

static void *g_lib;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void open_driver(void) { g_lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL); }

void *cp_cuda_sym(const char *name, const char *fallback) {
  pthread_once(&g_once, open_driver);
  if (!g_lib) return NULL;
  void *f = dlsym(g_lib, name);
  if (!f && fallback) f = dlsym(g_lib, fallback);
  return f;
}
