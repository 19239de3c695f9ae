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
#include <stdint.h>

struct cp_pool;

typedef struct cp_comm {
  uint32_t index;          /* 1.. ; 0 is reserved for the PXN detach pool */
  uint64_t comm_id;
  char comm_name[64];
  int nranks, nnodes, nccl_rank;
  char gpu_uuid[40];       /* "" without a CUDA driver */
  uint64_t ctx_value;      /* the value handed to NCCL as context */
  struct cp_pool *pool;
  int finalized;
  /* The trace's per-communicator fields of an event line, formatted once
   * at registration (trace_json.c copies them):
   * ,"gpuUuid":"...","commId":"...","rank":N */
  uint32_t json_id_len;
  char json_id[320];
  /* Events recorded (relaxed atomic), stored at every event start by the
   * recording thread: on a cache line of its own (the entry is allocated
   * in whole lines), away from json_id, ctx_value and nccl_rank, which
   * the trace writer reads for every line it formats; sharing a line, the
   * two cores would take it from each other at every event. */
  uint64_t events __attribute__((aligned(64)));
  char events_line[64 - sizeof(uint64_t)];
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
/* Writable entry by index (recording core only). */
cp_comm *cp_registry_get_mut(uint32_t index);
/* The per-process salt in context values; redrawn in a forked child so the
 * parent's contexts are foreign there. */
uint32_t cp_registry_salt(void);
void cp_registry_after_fork(void);

#endif
