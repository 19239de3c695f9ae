/*
 * trace.h — the JSONL trace: binary records on the calling thread, JSON on
 * a writer thread.
 *
 * The hot path (event_start.c, event_stop.c, event_state.c) writes a
 * cp_rec (or a 32-byte cp_srec for a state) straight into a per-thread
 * single-producer ring: no lock, no system call, no formatting.  A writer thread (trace_writer.c) drains every ring, formats
 * the records as shared/docs/trace-format.md defines them, and writes large
 * blocks with whole lines only.  A full ring drops the record and counts it
 * (cp_trace_dropped); the count goes into the rank summary.
 *
 * Strings are interned ids (strtab.h), never NCCL's pointers, so a record
 * stays valid after NCCL or the caller freed its strings.
 */
#ifndef COLLPROF_TRACE_H
#define COLLPROF_TRACE_H
#include <stdint.h>
#include <stddef.h>

enum cp_rec_kind { CP_REC_EVENT = 1, CP_REC_STATE = 2, CP_REC_LIFECYCLE = 3, CP_REC_LAUNCH = 4 };

/* One record: 120 bytes (4 ring units). */
typedef struct cp_rec {
  uint8_t kind;            /* cp_rec_kind */
  uint8_t is_pxn;
  uint8_t state_arg_kind;  /* state records: 0 none, 1 transSize, 2 appendedProxyOps, 3 pTimer(gpuStop) */
  uint8_t pad0;
  uint32_t type;           /* NCCL event-type bit; lifecycle: 0 */
  uint32_t path;           /* local path id (event records) / state number (state records) */
  int32_t rank;            /* NCCL rank, -1 for PXN */
  uint32_t comm;           /* registry index of the communicator, 0 = none (PXN) */
  int32_t pid, start_tid, stop_tid;
  int32_t origin_pid;      /* PXN: proxyOp.pid */
  uint32_t func;           /* interned string id, 0 = "" */
  uint64_t start_ns, stop_ns;  /* CLOCK_MONOTONIC ns (state: start_ns = ts) */
  uint64_t parent_obj, event_addr, ctx_addr;
  union {                  /* details by type (48 bytes) */
    struct { int32_t group_depth; uint8_t graph_captured; } group_api;
    struct { uint64_t count; uint32_t datatype; int32_t root; uint8_t graph_captured; } coll_api; /* P2pApi too */
    struct { uint64_t stream; } kernel_launch;
    struct { uint64_t seq, count; uint32_t datatype, algo, proto; int32_t root;
             uint8_t channels, nwarps; } coll;
    struct { uint64_t count; uint32_t datatype; int32_t peer; uint8_t channels; } p2p;
    struct { int32_t peer, nsteps, chunk_size, is_send; uint8_t channel; } proxy_op;
    struct { int32_t step; } proxy_step;
    struct { uint64_t gpu_start, gpu_stop; uint8_t channel; } kernel_ch;
    struct { int64_t id; } net_plugin;
    struct { uint64_t arg; } state;          /* state records: the argument */
    struct { uint32_t event_mask; uint8_t is_finalize; } lifecycle;
    /* a timed kernel launch (launch_timer.h): parent_obj is the
     * KernelLaunch's handle, event_addr its one Coll/P2p's (0: none or
     * several, nops of them), start_ns the host time of the launch */
    struct { uint64_t gpu_ns, bytes; uint32_t nops, launches; uint8_t first, multi, idle; } launch;
  } d;
} cp_rec;

/* One 32-byte unit of a thread's ring (trace_writer.c): a cp_rec takes 4. */
typedef struct cp_unit { uint64_t w[4]; } cp_unit;

/* A state record as the hot path writes it (one unit); the writer expands
 * it to a CP_REC_STATE cp_rec (type 0): rank and comm from the
 * registry entry of the handle's comm index (none when is_pxn), pid the
 * process's. */
enum { CP_REC_STATE_C = 0x10 };
typedef struct cp_srec {
  uint8_t kind;            /* CP_REC_STATE_C */
  uint8_t flags;           /* bits 0-2: cp_rec.state_arg_kind; bit 3: is_pxn */
  uint8_t pad;             /* 0 (the trace's state lines carry no type) */
  uint8_t state;           /* NCCL's state number (larger ones: full cp_rec) */
  int32_t tid;
  uint64_t handle;         /* the event's handle (eventAddr) */
  uint64_t ts;
  uint64_t arg;
} cp_srec;

/* Expand a compact state record (writer side). */
void cp_srec_expand(const cp_srec *s, cp_rec *r);

/* An event record in two units, for every event but a PXN one (its rank,
 * pid and context are another process's) and a Coll whose details do not
 * fit (below): half the bytes the hot path writes into a ring, and a ring
 * holds twice as many.  Left out, because the writer finds them: rank and
 * context (registry entry of comm), pid (the process's), func (the leaf of
 * the path: paths.h, cp_path_func) and the stop thread (the ring's owner:
 * a record enters the ring of the thread that stopped the event).
 * A Coll's 34 bytes of details go in packed (cp_erec_coll_pack): seq and
 * count in 48 bits each, root + 1 in 16, algo and proto ids in 8 each,
 * channels and warps in y; one that does not fit (a count of 2^48
 * elements, a root above 65534, a 257th interned string as its algo) takes
 * the full record, so nothing is cut.  Why: the Coll is the one event of
 * a call recorded on every call when KernelCh is on (GPU sampling), and
 * its record was twice the bytes of every other's, written at its start
 * and copied at its stop on the application thread. */
enum { CP_REC_EVENT_C = 0x11 };
typedef struct cp_erec {
  uint8_t kind;            /* CP_REC_EVENT_C */
  uint8_t type_bit;        /* NCCL type = 1 << type_bit */
  uint16_t path;           /* local path id (never a pseudo-path) */
  uint16_t comm;           /* registry index, >= 1 */
  uint16_t y;              /* Coll: channels | warps << 8; else 0 */
  int32_t start_tid;
  uint32_t x;              /* datatype id (CollApi, P2pApi, P2p, Coll), channel (KernelCh) */
  uint64_t start_ns, stop_ns;
  uint64_t parent_obj, event_addr;
  union {                  /* details by type (16 bytes) */
    struct { int32_t group_depth; uint8_t graph_captured; } group_api;
    struct { uint64_t count; int32_t root; uint8_t graph_captured; } coll_api;   /* P2pApi too */
    struct { uint64_t stream; } kernel_launch;
    struct { uint64_t count; int32_t peer; uint8_t channels; } p2p;
    struct { int32_t peer, nsteps, chunk_size; uint8_t is_send, channel; } proxy_op;
    struct { int32_t step; } proxy_step;
    struct { uint64_t gpu_start, gpu_stop; } kernel_ch;
    struct { int64_t id; } net_plugin;
    struct { uint64_t seq_ap, count_root; } coll;   /* cp_erec_coll_pack */
  } d;
} cp_erec;
_Static_assert(sizeof(cp_erec) == 64, "a compact event record is two ring units");

/* A Coll's details packed into a compact record's d, x and y: 1, or 0
 * (nothing written) where one does not fit, and the event takes a full
 * record.  Inline: the application thread's, at every recorded Coll. */
static inline int cp_erec_coll_pack(cp_erec *e, uint64_t seq, uint64_t count, int32_t root, uint32_t dt,
                                    uint32_t algo, uint32_t proto, uint8_t channels, uint8_t nwarps) {
  const uint64_t big = (seq | count) >> 48;
  const uint32_t r1 = (uint32_t)root + 1u;   /* -1..65534 -> 0..65535 */
  if (__builtin_expect(big != 0 || r1 > 0xFFFFu || ((algo | proto) >> 8) != 0, 0)) return 0;
  e->d.coll.seq_ap = seq | (uint64_t)algo << 48 | (uint64_t)proto << 56;
  e->d.coll.count_root = count | (uint64_t)r1 << 48;
  e->x = dt;
  e->y = (uint16_t)(channels | nwarps << 8);
  return 1;
}

/* Expand a compact event record (writer side); stop_tid: the ring's owner. */
void cp_erec_expand(const cp_erec *e, int32_t stop_tid, cp_rec *r);
/* Only its details (type: the NCCL type bit), into r->d; also the plugin's
 * way to fill a full record (PXN) from the one description of them. */
void cp_erec_details(const cp_erec *e, uint32_t type, cp_rec *r);

/* Start the trace (idempotent; opens the file lazily on first record). */
void cp_trace_start(void);
/* Hot path: copy one record into this thread's ring. Never blocks. */
void cp_trace_put(const cp_rec *r);
/* The callbacks' own records (a state; an event record copied from the
 * one built in its slot, with the stop filled in) are written inline:
 * trace_ring.h, cp_trace_put_state_i and cp_trace_put_stopped_i. */
/* Drain every ring and write everything out (called at finalize/exit). */
void cp_trace_flush(void);
/* Records lost to full rings. */
uint64_t cp_trace_dropped(void);
/* Move the open file to a new name (rank known). 0 on success. */
int cp_trace_rename(const char *new_path);
/* Append whole lines (already JSON) after flushing; used for path and
 * summary records.  Returns the file offset where they start, -1 on error. */
long cp_trace_append_lines(const char *text, size_t len);
/* Truncate the file at offset (rewriting the tail with global ids). */
int cp_trace_truncate(long offset);
/* Stop the writer thread and close the file (idempotent). */
void cp_trace_close(void);
/* Async-signal-safe: write what the rings hold as whole lines, if the
 * writer is not mid-write.  For SIGTERM/SIGINT handlers. */
void cp_trace_flush_signal_safe(void);
/* After cp_trace_flush_signal_safe, when the process did not die: release
 * the file lock the handler kept.  Async-signal-safe. */
void cp_trace_resume_signal_safe(void);

/* ---- added by the output code (H2) ---- */
/* Bytes held by the per-thread rings (for the summary's memoryBytes).
 * Rings hold COLLPROF_TRACE_BUFFER records rounded up to a power of two. */
uint64_t cp_trace_memory_bytes(void);

#endif
