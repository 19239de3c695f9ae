/*
 * handle.h — what collprof hands to NCCL: event handles and context values.
 *
 * Neither is a pointer.  NCCL only stores them, passes them back and tests
 * them against NULL (ABI doc), so each carries what the plugin needs later
 * and can be checked by arithmetic alone, without dereferencing anything:
 * a value from another process (PXN), from another plugin, or garbage is
 * recognised as "not ours" before any table is touched.
 *
 * Event handle, 64 bits:
 *   63..60  tag 0xC      never a canonical x86-64 address, never NULL
 *   59..44  path id      the event's local call-path id (children derive
 *                        their path from this, never from the slot, so it
 *                        stays right however long ago the parent stopped)
 *   43..32  comm index   pool owner; 0 = process-wide PXN detach pool,
 *                        CP_COMM_SCRATCH = the self-cost scratch pool
 *   31..8   slot         31..28 lane: which of the communicator's pools (one
 *                        per calling thread, registry.h); 27..8 the slot's
 *                        index in that pool (top 256 values: fallback set);
 *                        a counted event (generation 0, host sampling) has
 *                        no slot and keeps its type's bit index + 1 there
 *    7..0   generation   low 8 bits of the slot's 32-bit generation (never 0): detects
 *                        that the slot was handed out again since
 *
 * Context value, 64 bits:
 *   63..60  tag 0xD
 *   59..32  salt         28 random bits drawn per process (redrawn after fork)
 *   31..12  zero
 *   11..0   comm index   1..CP_COMM_MAX, index into the registry
 */
#ifndef COLLPROF_HANDLE_H
#define COLLPROF_HANDLE_H
#include <stdint.h>

#define CP_HANDLE_TAG 0xCULL
#define CP_CTX_TAG 0xDULL
#define CP_COMM_BITS 12
#define CP_COMM_SCRATCH 4095u          /* never registered: self-cost pool */
#define CP_COMM_MAX 4094u              /* highest registry index */
#define CP_SLOT_BITS 24
#define CP_SLOT_LIMIT (1u << CP_SLOT_BITS)
/* The slot field's top CP_LANE_BITS name the pool (lane) of the
 * communicator, the rest the slot in it. */
#define CP_LANE_BITS 4
#define CP_LANES (1u << CP_LANE_BITS)
#define CP_LOCAL_BITS (CP_SLOT_BITS - CP_LANE_BITS)
#define CP_LOCAL_MASK ((1u << CP_LOCAL_BITS) - 1)
static inline uint32_t cp_slot_lane(uint32_t slot) { return slot >> CP_LOCAL_BITS; }
static inline uint32_t cp_slot_local(uint32_t slot) { return slot & CP_LOCAL_MASK; }
/* Tag, comm index and lane of a handle as handle bits: what names a pool. */
#define CP_HKEY_MASK 0xF0000FFFF0000000ull
/* Tag and comm index alone: what names a communicator (any lane). */
#define CP_HCOMM_MASK 0xF0000FFF00000000ull
static inline uint64_t cp_pool_hkey(uint32_t comm, uint32_t lane) {
  return (CP_HANDLE_TAG << 60) | ((uint64_t)(comm & 0xFFFu) << 32) | ((uint64_t)(lane & (CP_LANES - 1)) << 28);
}

typedef struct cp_handle_fields {
  uint32_t path;   /* 16 bits */
  uint32_t comm;   /* 12 bits */
  uint32_t slot;   /* 24 bits */
  uint32_t gen;    /*  8 bits */
} cp_handle_fields;

static inline uint64_t cp_handle_make(uint32_t path, uint32_t comm, uint32_t slot, uint32_t gen) {
  return (CP_HANDLE_TAG << 60) | ((uint64_t)(path & 0xFFFFu) << 44) |
         ((uint64_t)(comm & 0xFFFu) << 32) | ((uint64_t)(slot & 0xFFFFFFu) << 8) |
         (uint64_t)(gen & 0xFFu);
}

/* 1 when v has our handle tag (it may still name nothing: check the fields). */
static inline int cp_handle_decode(uint64_t v, cp_handle_fields *f) {
  if ((v >> 60) != CP_HANDLE_TAG) return 0;
  f->path = (uint32_t)(v >> 44) & 0xFFFFu;
  f->comm = (uint32_t)(v >> 32) & 0xFFFu;
  f->slot = (uint32_t)(v >> 8) & 0xFFFFFFu;
  f->gen = (uint32_t)v & 0xFFu;
  return 1;
}

/* The fields of a value already known to carry the tag. */
static inline cp_handle_fields cp_handle_fields_of(uint64_t v) {
  const cp_handle_fields f = {(uint32_t)(v >> 44) & 0xFFFFu, (uint32_t)(v >> 32) & 0xFFFu,
                              (uint32_t)(v >> 8) & 0xFFFFFFu, (uint32_t)v & 0xFFu};
  return f;
}

static inline uint64_t cp_ctx_make(uint32_t salt, uint32_t comm) {
  return (CP_CTX_TAG << 60) | ((uint64_t)(salt & 0xFFFFFFFu) << 32) | (uint64_t)(comm & 0xFFFu);
}

/* Registry index named by a context value with this salt, 0 if not ours. */
static inline uint32_t cp_ctx_decode(uint64_t v, uint32_t salt) {
  if ((v >> 60) != CP_CTX_TAG) return 0;
  if (((uint32_t)(v >> 32) & 0xFFFFFFFu) != (salt & 0xFFFFFFFu)) return 0;
  if ((v & 0xFFFFF000ULL) != 0) return 0;
  uint32_t idx = (uint32_t)v & 0xFFFu;
  return idx <= CP_COMM_MAX ? idx : 0;
}

#endif
