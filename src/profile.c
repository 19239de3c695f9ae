/*
 * profile.c — per-path numbers in per-thread arrays (profile.h).
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#pragma GCC visibility push(hidden)
#include "profile.h"
#include "paths.h"
#include "strtab.h"
#include "tls.h"

cp_prof_ent *cp_prof_ent_slow(cp_thr *t, uint32_t path) {
  if (path >= CP_PROF_CHUNK * CP_PROF_NCHUNK) return NULL;
  cp_prof_ent *c = t->prof[path / CP_PROF_CHUNK];
  if (!c) {
    /* First event of this thread in these 256 paths: one allocation. */
    c = cp_calloc_lines(CP_PROF_CHUNK * sizeof *c);
    if (!c) return NULL;
    for (uint32_t i = 0; i < CP_PROF_CHUNK; i++) c[i].min = UINT64_MAX;   /* no first-call test at stop */
    __atomic_store_n(&t->prof[path / CP_PROF_CHUNK], c, __ATOMIC_RELEASE);
  }
  return &c[path % CP_PROF_CHUNK];
}

cp_gcls *cp_prof_cls_slow(cp_prof_ent *e) {
  /* once per path and thread: bounded like the profile chunks */
  cp_gcls *g = cp_calloc_lines(sizeof *g);
  if (g) __atomic_store_n(&e->cls, g, __ATOMIC_RELEASE);
  return g;
}

void cp_profile_stop(uint32_t path, uint64_t dur, uint64_t self, uint64_t bytes) {
  cp_profile_stop_t(cp_thr_get(), path, dur, self, bytes, 0);
}

void cp_profile_state(uint32_t path) { cp_profile_state_t(cp_thr_get(), path); }

void cp_profile_gpu(uint32_t path, uint64_t gpu_ns, int first) {
  cp_profile_gpu_t(cp_thr_get(), path, gpu_ns, first);
}

void cp_profile_span(uint32_t path, uint64_t gpu_ns, int first, uint64_t bytes) {
  cp_thr *t = cp_thr_get();
  cp_profile_gpu_t(t, path, gpu_ns, first);
  cp_prof_ent *e = cp_prof_ent_get(t, path);
  if (!e) return;
  cp_gcls *g = cp_prof_cls(e);
  if (g) cp_gcls_add_sample(g, bytes, gpu_ns, first);
}

void cp_profile_merge(collprof_path_stat *out, size_t n, cp_gcls **cls) {
  for (cp_thr *t = cp_thr_all(); t; t = t->next) {
    for (size_t c = 0; c < CP_PROF_NCHUNK && c * CP_PROF_CHUNK < n; c++) {
      cp_prof_ent *ch = __atomic_load_n(&t->prof[c], __ATOMIC_ACQUIRE);
      if (!ch) continue;
      for (size_t i = 0; i < CP_PROF_CHUNK && c * CP_PROF_CHUNK + i < n; i++) {
        cp_prof_ent *e = &ch[i];
        collprof_path_stat *o = &out[c * CP_PROF_CHUNK + i];
        uint64_t calls = __atomic_load_n(&e->calls, __ATOMIC_ACQUIRE);
        const uint64_t untimed = cp_ld(&e->untimed);
        if (calls > untimed) {   /* min and max from timed events only */
          uint64_t mn = cp_ld(&e->min), mx = cp_ld(&e->max);
          if (o->calls == o->untimed_calls || mn < o->min_ns) o->min_ns = mn;
          if (mx > o->max_ns) o->max_ns = mx;
        }
        o->calls += calls;
        o->untimed_calls += untimed;
        o->timed_weight_extra += cp_ld(&e->wextra);
        o->total_ns += cp_ld(&e->total);
        o->self_ns += cp_ld(&e->self);
        o->bytes += cp_ld(&e->bytes);
        o->states += cp_ld(&e->states);
        o->gpu_ns += cp_ld(&e->gpu_ns);
        o->gpu_samples += cp_ld(&e->gpu_samples);
        o->gpu_first_ns += cp_ld(&e->gpu_first_ns);
        o->gpu_first_samples += cp_ld(&e->gpu_first_samples);
        o->gpu_launch_ns += cp_ld(&e->launch_ns);
        o->gpu_launch_samples += cp_ld(&e->launch_samples);
        cp_gcls *g = __atomic_load_n(&e->cls, __ATOMIC_ACQUIRE);
        size_t at = c * CP_PROF_CHUNK + i;
        if (g && cls) {
          if (!cls[at]) cls[at] = calloc(1, sizeof *cls[at]);
          if (cls[at]) cp_gcls_add(cls[at], g);
        }
      }
    }
  }
}

/* ---- datatype sizes ---- */
static const struct { const char *name; uint8_t size; } dt_table[] = {
  {"ncclInt8", 1}, {"ncclChar", 1}, {"ncclUint8", 1},
  {"ncclInt32", 4}, {"ncclInt", 4}, {"ncclUint32", 4},
  {"ncclInt64", 8}, {"ncclUint64", 8},
  {"ncclFloat16", 2}, {"ncclHalf", 2}, {"ncclBfloat16", 2},
  {"ncclFloat32", 4}, {"ncclFloat", 4},
  {"ncclFloat64", 8}, {"ncclDouble", 8},
  {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1},
};
#define DT_MEMO 4096
static _Atomic uint8_t dt_memo[DT_MEMO];   /* size + 1; 0 = not computed */

uint32_t cp_datatype_size(uint32_t id) {
  if (id == 0) return 0;
  if (id < DT_MEMO) {
    uint8_t m = atomic_load_explicit(&dt_memo[id], memory_order_relaxed);
    if (m) return m - 1u;
  }
  const char *s = cp_str_get(id);
  uint8_t size = 0;
  for (size_t i = 0; i < sizeof dt_table / sizeof dt_table[0]; i++)
    if (strcmp(s, dt_table[i].name) == 0) { size = dt_table[i].size; break; }
  if (id < DT_MEMO) atomic_store_explicit(&dt_memo[id], (uint8_t)(size + 1), memory_order_relaxed);
  return size;
}
