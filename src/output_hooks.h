/*
 * output_hooks.h — calls between the recording core (plugin.c, event_*.c,
 * snapshot.c) and the output code (output*.c, helper H2).
 *
 * Implemented by the output code, called by the core.  The core references
 * them weakly: a build without them still loads, and unit tests that link
 * only the core need no stubs.
 */
#ifndef COLLPROF_OUTPUT_HOOKS_H
#define COLLPROF_OUTPUT_HOOKS_H

#include <stddef.h>
#include <stdint.h>

/* The last communicator this process initialised was finalized (NCCL may
 * dlclose the plugin next).  May be called again if new communicators are
 * created later and finalized in turn: make it idempotent. */
void cp_output_on_last_finalize(void) __attribute__((weak));

/* World rank and size as collprof_set_identity() set them (-1/0 before). */
void cp_output_get_identity(int *world_rank, int *world_size) __attribute__((weak));

/* Implemented by the core, called by collprof_shutdown(): from now on every
 * callback is ignored (one warning, counted in badCalls).  Idempotent. */
void cp_plugin_stop(void);

/* Implemented by the core (snapshot.c), called at exit: events recorded or
 * counted since the snapshot the run was collated from (MPI_Finalize's
 * first), which are in the trace but in no number; 0 without one. */
uint64_t cp_snapshot_events_after_end(void) __attribute__((weak));

/* Implemented by the core (snapshot.c), called by the rank file's tail
 * writer: the paths first seen after that snapshot (local ids from its
 * npaths on), identity fields only (id, hash, string, leaf), so that the
 * trace records of events after MPI_Finalize name a path the file lists.
 * Returns their number and a malloc'd array in *out (free it); 0 and NULL
 * without a kept snapshot. */
struct collprof_path_stat;
size_t cp_snapshot_paths_after_end(struct collprof_path_stat **out) __attribute__((weak));

#endif
