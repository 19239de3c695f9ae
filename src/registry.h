/*
 * registry.h — every communicator context this process created.
 *
 * The context NCCL gets back from init is an encoded index into this table,
 * not a pointer, so a context value can be recognised as ours (or not)
 * without dereferencing it: PXN proxy events carry another process's
 * context.  Entries live until the process ends (the trace writer and the
 * final summary read them after NCCL finalized the communicator).
 */
#ifndef COLLPROF_REGISTRY_H
#define COLLPROF_REGISTRY_H
#include <stdatomic.h>
#include <stdint.h>
#include "handle.h"

struct cp_pool;

typedef struct cp_comm {
  uint32_t index;          /* 1.. ; 0 is reserved for the PXN detach pool */
  uint64_t comm_id;
  char comm_name[64];
  int nranks, nnodes, nccl_rank;
  char gpu_uuid[40];       /* "" without a CUDA driver */
  uint64_t ctx_value;      /* the value handed to NCCL as context */
  /* Its event pools, one per calling thread (a lane each, named in the
   * handle: handle.h).  NCCL calls a communicator from the application
   * thread and from its proxy thread (ProxyCtrl, KernelCh, ProxyOp,
   * ProxyStep); with one pool the two took one lock, and the lines of
   * the lock, the round-robin cursor and the counters went back and forth
   * between the two cores at every event (collprof-bench --proxy: the
   * application thread's cost per event 2-4 times higher).  A thread takes
   * the first free lane when it first starts an event here (lane_owner:
   * its cp_thr); children link to parents in other lanes as to any other
   * pool.  Lane 0 exists from registration; with every lane taken, a
   * thread shares one (pools are locked: correct, only slower). */
  struct cp_pool *lanes[CP_LANES];
  uintptr_t lane_owner[CP_LANES];
  atomic_uint lanes_lock;  /* lane creation against finalize (cp_spin_lock) */
  int finalized;
  /* The trace's per-communicator fields of an event line, formatted once
   * at registration (trace_json.c copies them):
   * ,"gpuUuid":"...","commId":"...","rank":N */
  uint32_t json_id_len;
  char json_id[320];
} cp_comm;

/* The communicator with this registry index, NULL if none. */
const cp_comm *cp_registry_get(uint32_t index);
/* Number of indices in use (valid indices are 1..count). */
uint32_t cp_registry_count(void);

/* ---- added by the recording core (H1): registration and decoding ---- */
/* Register a communicator at init (thread-safe; init may run concurrently).
 * Creates its event pool.  NULL when the table is full or memory ran out. */
cp_comm *cp_registry_add(uint64_t comm_id, const char *comm_name, int nnodes,
                         int nranks, int nccl_rank, const char *gpu_uuid);
/* The communicator a context value names, NULL when the value is not one
 * this process handed out (foreign PXN context, garbage, NULL).  Pure
 * arithmetic on the value plus a table lookup: never dereferences it. */
cp_comm *cp_registry_from_ctx(uint64_t ctx_value);
/* Lane `lane`'s pool of communicator `index` (lane 0: the one created at
 * registration), NULL if none. */
struct cp_pool *cp_registry_lane(uint32_t index, uint32_t lane);
/* Writable entry by index (recording core only). */
cp_comm *cp_registry_get_mut(uint32_t index);
/* The per-process salt in context values; redrawn in a forked child so the
 * parent's contexts are foreign there. */
uint32_t cp_registry_salt(void);
void cp_registry_after_fork(void);

#endif
