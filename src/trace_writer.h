/*
 * trace_writer.h — what the output code (local_write.c) needs from the
 * trace writer beyond trace.h: the tail of the file (path, rank and clock
 * records) that must stay last whatever the writer appends later.
 *
 * Owned by trace_writer.c; the file's own (cp_trace_lines, cp_trace_failed,
 * cp_trace_path) by trace_file.c.
 */
#ifndef COLLPROF_TRACE_WRITER_H
#define COLLPROF_TRACE_WRITER_H
#include <stddef.h>
#include <stdint.h>

/* Flush, then replace the tail (if any) with these whole lines and keep a
 * copy: when the writer later has records to add, it cuts the tail, writes
 * the records and writes the copy again, so the file always ends with the
 * latest tail.  Returns the offset where the tail starts, -1 on error. */
long cp_trace_set_tail(const char *text, size_t len);

/* Records written to the file so far (event, state, lifecycle lines). */
uint64_t cp_trace_lines(void);

/* 1 in the child of a fork: the trace is off there (see trace_writer.c). */
int cp_trace_in_fork_child(void);

/* 1 when the trace file could not be created (one warning was given). */
int cp_trace_failed(void);

/* The process id the trace's records carry (set at trace start). */
int cp_trace_pid(void);

/* The trace file's current name ("" before cp_trace_start). */
void cp_trace_path(char *buf, size_t cap);

/* A ring that one thread fills on behalf of another (proxy_defer.c: the
 * applier writes the records of NCCL's proxy thread): its records carry
 * tid as the thread that stopped them.  NULL when the trace is off or out
 * of memory.  The ring is never given back; at most one thread at a time
 * may write it.  cp_trace_ring_use makes rg the calling thread's ring
 * (NULL: none, the next record attaches its own) and returns the one it
 * replaces, to be put back the same way. */
struct cp_ring;
struct cp_ring *cp_trace_ring_for(int tid);
struct cp_ring *cp_trace_ring_use(struct cp_ring *rg);
/* Give back a ring of cp_trace_ring_for: the writer writes what it holds,
 * then hands it out again. */
void cp_trace_ring_release(struct cp_ring *rg);

/* Rings made ahead, at a communicator's init (plugin.c), for `threads`
 * recording threads in all: free ones are made until the rings in use plus
 * the free ones reach it (at most 16 free, and at most 32 MiB of them, but
 * 2 always), so that the threads that record first (the application's,
 * NCCL's proxy threads) take one instead of making and touching 2 MiB in
 * their first callback (1.3-1.7 ms on the CPU, on the proxy thread's first
 * call).  Made on the calling thread, whose memory node is the GPU's
 * during NCCL's init. */
void cp_trace_prepare(unsigned threads);

#endif
