/*
 * mix64.h — splitmix64's finalizer: a 64-bit value to a well-mixed one.
 * Shared by the sampling rules that must draw positions without a shared
 * generator (gpu_sample_rule.c's periodic blocks, tls.c's per-thread seeds):
 * a pure function of its argument, so a draw costs no state and no lock.
 */
#ifndef COLLPROF_MIX64_H
#define COLLPROF_MIX64_H
#include <stdint.h>

static inline uint64_t cp_mix64(uint64_t x) {
  uint64_t z = x * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

#endif
