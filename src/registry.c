/*
 * registry.c — the communicators this process created (registry.h).
 *
 * A fixed table of pointers indexed 1..CP_COMM_MAX, published with release
 * stores under a mutex (init may run concurrently); lookups are lock-free.
 * Entries and their pool headers are never freed: the trace writer and the
 * final summary read them after NCCL finalized the communicator (the pool's
 * slots are released at finalize, pool.h).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#pragma GCC visibility push(hidden)
#include "registry.h"
#include "pool_owner.h"
#include "jfmt.h"
#include "config.h"
#include "handle.h"
#include "pool.h"
#include "tls.h"

static cp_comm *_Atomic reg[CP_COMM_MAX + 1];
static _Atomic uint32_t reg_count;
static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic uint32_t reg_salt;

static uint32_t draw_salt(void) {
  uint32_t s = 0;
  if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s = (uint32_t)ts.tv_nsec ^ ((uint32_t)getpid() << 12) ^ (uint32_t)(uintptr_t)&s;
  }
  s &= 0xFFFFFFFu;
  return s ? s : 0x5A17u;   /* never 0: a zeroed value must not decode */
}

uint32_t cp_registry_salt(void) {
  uint32_t s = atomic_load_explicit(&reg_salt, memory_order_acquire);
  if (__builtin_expect(s != 0, 1)) return s;
  uint32_t n = draw_salt(), z = 0;
  atomic_compare_exchange_strong(&reg_salt, &z, n);
  return atomic_load_explicit(&reg_salt, memory_order_acquire);
}

void cp_registry_after_fork(void) { atomic_store(&reg_salt, draw_salt()); }

cp_comm *cp_registry_add(uint64_t comm_id, const char *comm_name, int nnodes, int nranks, int nccl_rank,
                         const char *gpu_uuid) {
  const cp_config *cfg = cp_config_get();
  cp_comm *c = cp_calloc_lines(sizeof *c);
  if (!c) return NULL;
  pthread_mutex_lock(&reg_mu);
  uint32_t idx = atomic_load_explicit(&reg_count, memory_order_relaxed) + 1;
  if (idx > CP_COMM_MAX) { pthread_mutex_unlock(&reg_mu); free(c); return NULL; }
  c->lanes[0] = cp_pool_create(idx, cfg->pool_size, cfg->blacklist_cap);
  if (!c->lanes[0]) { pthread_mutex_unlock(&reg_mu); free(c); return NULL; }
  cp_pool_prepare(c->lanes[0]);   /* not yet reachable: NCCL has no context for it */
  cp_pool_prepare_inbox(c->lanes[0]);   /* the proxy thread's posts (pool_owner.h) */
  /* ...and the second lane, with its first chunk: the second thread that
   * records (NCCL's proxy thread) takes it (plugin.c cp_lane_of) instead of
   * making it in its first callback (0.2-0.3 ms on the CPU); none: made
   * on first use as the others */
  _Static_assert(CP_LANES >= 2, "a second lane to make ahead");
  c->lanes[1] = cp_pool_create_lane(idx, 1, cfg->pool_size, cfg->blacklist_cap);
  cp_pool_prepare(c->lanes[1]);   /* NULL-safe */
  atomic_init(&c->lanes_lock, 0u);
  c->index = idx;
  c->comm_id = comm_id;
  if (comm_name) {
    strncpy(c->comm_name, comm_name, sizeof c->comm_name - 1);
    c->comm_name[sizeof c->comm_name - 1] = 0;
  }
  if (gpu_uuid) {
    strncpy(c->gpu_uuid, gpu_uuid, sizeof c->gpu_uuid - 1);
    c->gpu_uuid[sizeof c->gpu_uuid - 1] = 0;
  }
  c->nnodes = nnodes;
  c->nranks = nranks;
  c->nccl_rank = nccl_rank;
  c->ctx_value = cp_ctx_make(cp_registry_salt(), idx);
  char *p = JF_LIT(c->json_id, ",\"gpuUuid\":");
  p = jf_str(p, c->gpu_uuid, 240);   /* as trace_json.c bounds it */
  p = JF_LIT(p, ",\"commId\":\"");
  p = jf_u64(p, comm_id);
  p = JF_LIT(p, "\",\"rank\":");
  p = jf_i64(p, nccl_rank);
  c->json_id_len = (uint32_t)(p - c->json_id);
  atomic_store_explicit(&reg[idx], c, memory_order_release);
  atomic_store_explicit(&reg_count, idx, memory_order_release);
  pthread_mutex_unlock(&reg_mu);
  return c;
}

cp_comm *cp_registry_get_mut(uint32_t index) {
  if (index == 0 || index > CP_COMM_MAX) return NULL;
  return atomic_load_explicit(&reg[index], memory_order_acquire);
}

const cp_comm *cp_registry_get(uint32_t index) { return cp_registry_get_mut(index); }

struct cp_pool *cp_registry_lane(uint32_t index, uint32_t lane) {
  const cp_comm *c = cp_registry_get(index);
  return c && lane < CP_LANES ? __atomic_load_n(&c->lanes[lane], __ATOMIC_ACQUIRE) : NULL;
}

uint32_t cp_registry_count(void) { return atomic_load_explicit(&reg_count, memory_order_acquire); }

cp_comm *cp_registry_from_ctx(uint64_t v) {
  uint32_t idx = cp_ctx_decode(v, cp_registry_salt());
  return idx ? cp_registry_get_mut(idx) : NULL;
}
