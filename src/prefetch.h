/*
 * prefetch.h — asking for a cache line before it is written.
 *
 * Some of collprof's stores predictably miss on an NCCL host: the trace
 * ring's next records (the writer thread read them on another core) and
 * the pool slot the next recorded start takes (round-robin, so not touched
 * since the pool last went round; its Coll's KernelCh may have written it
 * from the proxy thread).  Between two callbacks NCCL's own work takes
 * microseconds, so a line asked for at one callback is there at the next.
 * A write prefetch (prefetchw) fetches the line for owning: a plain
 * prefetch would fetch it shared and the store would still wait.  Only a
 * hint: a wrong address costs a fetch, never a fault.
 */
#ifndef COLLPROF_PREFETCH_H
#define COLLPROF_PREFETCH_H

static inline void cp_prefetch_write(const void *p) {
#if defined(__x86_64__)
  __asm__ volatile("prefetchw %0" : : "m"(*(const char *)p));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

#endif
