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
#include <stdint.h>

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
