/*
 * paths.h — the call-path table: one id per distinct chain of event types
 * (and functions), per process, shared by all communicators.
 *
 * An element is "Type" or "Type:func" with NCCL's short type names; func is
 * kept for CollApi, P2pApi, Coll, P2p (the descriptor's func) and ProxyOp
 * ("Send"/"Recv").  A path's string is its elements root first joined by
 * "/", e.g. "GroupApi/CollApi:AllReduce/Coll:AllReduce/KernelCh"; its hash
 * is XXH3_64bits of that string (the identity used across ranks).
 *
 * Ids are dense from 0 in order of creation and never change or go away.
 * Three pseudo-parents stand for what has no path entry of its own:
 *   CP_PATH_NONE     no parent: the child is a root ("Group")
 *   CP_PATH_UNKNOWN  a parent value that is not one of our handles:
 *                    "UnknownParent/Coll:AllReduce"
 *   CP_PATH_PXN      a cross-process proxy event: "PXN/ProxyOp:Send"
 * cp_path_child() returns CP_PATH_NONE only when the table is full (65533
 * paths) or memory ran out.
 *
 * Lookup (parent, type, func) -> id is O(1): a per-thread direct-mapped
 * cache (tls.h), then a global hash table under a mutex on a miss.
 */
#ifndef COLLPROF_PATHS_H
#define COLLPROF_PATHS_H
#include <stdatomic.h>
#include <stdint.h>
#include "tls.h"

#define CP_PATH_NONE 0xFFFFu
#define CP_PATH_UNKNOWN 0xFFFEu
#define CP_PATH_PXN 0xFFFDu
#define CP_PATH_MAX 0xFFFDu     /* real ids are 0 .. CP_PATH_MAX-1 */

/* Child of `parent` (a real id or a pseudo-parent) for an event of NCCL
 * type bit `type` and interned func id `func` (ignored for types that
 * carry no func). */
uint32_t cp_path_child(uint32_t parent, uint32_t type, uint32_t func);
/* Same lookup through the per-thread cache only; CP_PATH_NONE on a miss,
 * never creates (the self-cost probe uses it). */
uint32_t cp_path_probe(uint32_t parent, uint32_t type, uint32_t func);

/* ---- hot path: the per-thread cache hit inlined ---- */
/* Key of a lookup: (parent:16, type index:4, func:32); cache entries hold
 * key + 1 (0 = empty).  Shared with paths.c. */
static inline uint64_t cp_path_key(uint32_t parent, int ti, uint32_t func) {
  return ((uint64_t)(parent & 0xFFFFu) << 36) | ((uint64_t)ti << 32) | func;
}
static inline uint32_t cp_path_key_hash(uint64_t k) {
  k ^= k >> 33; k *= 0xff51afd7ed558ccdULL; k ^= k >> 33;
  return (uint32_t)k;
}
#define CP_FUNC_TYPES (2u | 4u | 8u | 512u | 1024u)   /* Coll P2p ProxyOp CollApi P2pApi */
/* cp_path_child for a valid type bit (one bit, <= KernelLaunch) and a
 * parent that is a real id or a pseudo-parent, with the caller's block. */
static inline uint32_t cp_path_child_t(struct cp_thr *t, uint32_t parent, uint32_t type, uint32_t func) {
  if (!(type & CP_FUNC_TYPES)) func = 0;
  uint64_t key1 = cp_path_key(parent, __builtin_ctz(type), func) + 1;
  const cp_pcache_ent *ce = &t->pcache[cp_path_key_hash(key1 - 1) & (CP_PCACHE - 1)];
  if (__builtin_expect(ce->key1 == key1, 1)) return ce->id;
  return cp_path_child(parent, type, func);
}

#include "hot.h"   /* cp_hot.path_count: paths.c's ids in use */
static inline int cp_path_valid_i(uint32_t id) {
  return id < atomic_load_explicit(&cp_hot.path_count, memory_order_acquire);
}

uint32_t cp_path_count(void);
const char *cp_path_str(uint32_t id);     /* "" for an unknown id */
uint64_t cp_path_hash(uint32_t id);
uint32_t cp_path_type(uint32_t id);       /* NCCL type bit of the leaf */
uint32_t cp_path_func(uint32_t id);       /* interned func id of the leaf */
uint32_t cp_path_parent(uint32_t id);     /* parent id or a pseudo-parent */
/* 1 for a real id < cp_path_count(). */
int cp_path_valid(uint32_t id);

/* A Coll/P2p on this path got its first GPU (KernelCh) sample: mark it and
 * its ancestors (so the API path the mask control asks about sees it).
 * cp_path_gpu_seen() is declared in mask_control.h. */
void cp_path_mark_gpu(uint32_t id);

/* Short type name ("Coll") / NCCL name ("ncclProfileColl") of a type bit. */
const char *cp_type_short(uint32_t type);
const char *cp_type_nccl(uint32_t type);
/* Whether the element of this type shows a func. */
int cp_type_has_func(uint32_t type);

uint64_t cp_path_memory(void);

#endif
