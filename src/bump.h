/*
 * bump.h — memory that callbacks make once and never free (the texts of
 * new paths and interned strings), handed out from chunks made ahead.
 *
 * Why not malloc: glibc gives each thread that first calls malloc an arena
 * of its own, made then (an mmap of 64 MiB of address space and its first
 * pages).  A thread of NCCL's (its proxy thread) first allocates when it
 * records its first event on a new path, so that callback paid the arena:
 * 55-60 us of a 75 us first callback in a CPU replay of ar_nvlink (20 us
 * with MALLOC_ARENA_MAX=1).  Chunks made at a communicator's init, on the
 * initializing thread (cp_bump_prepare), take that out of NCCL's
 * callbacks; a chunk used up mid-run is made where it runs out, as malloc
 * would.  Nothing is ever freed: what comes from here lives as long as
 * the process, like the path and string tables that hold it.
 */
#ifndef COLLPROF_BUMP_H
#define COLLPROF_BUMP_H
#include <stddef.h>
#include <stdint.h>

/* n bytes, 8-aligned, zeroed; NULL when out of memory.  Thread-safe.
 * Sizes above a quarter of a chunk come from malloc (rare, and too large
 * to keep ahead). */
void *cp_bump_alloc(size_t n);
/* As cp_bump_alloc, for an interned string that the callbacks compare with
 * strcmp at every cache hit (strtab.h): never starting in the last 128
 * bytes of a page.  glibc's strcmp (AVX2) takes a slower way when the OR
 * of its two arguments' page offsets falls there, so a string starting
 * there always does; a build whose strings happened to land there cost 17
 * more instructions per compare, 4 per event in collprof-bench
 * (test/bench/instr_per_event.sh: 692 to 696, back to 692 with this). */
void *cp_bump_alloc_str(size_t n);
/* A chunk with at least half of it free, made now if there is none. */
void cp_bump_prepare(void);

#endif
