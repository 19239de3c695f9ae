/*
 * capture.h — capture mode (COLLPROF_CAPTURE=1): every callback NCCL makes
 * is also written in the format of shared/fixtures (README there), to
 * capture-pid<PID>.jsonl in the output folder, so a user can send a run that
 * replays anywhere with collprof-replay.
 *
 * Off by default and then costs one predictable branch per callback.  When
 * on, each call formats one line under a lock into a stdio buffer: capture
 * is a debugging aid, not the measured configuration.  Handles and contexts
 * are printed as the values collprof returned to NCCL.
 */
#ifndef COLLPROF_CAPTURE_H
#define COLLPROF_CAPTURE_H
#include <stdint.h>
#include "nccl_profiler_abi.h"

#include "hot.h"   /* cp_hot.capture_on: read on the hot path; set by cp_capture_init */

void cp_capture_init(void);
void cp_capture_comm_init(uint64_t ctx, uint64_t comm_id, const char *comm_name,
                          int nnodes, int nranks, int rank, int mask_in, int mask);
/* descr is always given in v5 form (v4 callers convert first). */
void cp_capture_start(uint64_t ctx, uint64_t handle, const ncclProfilerEventDescr_v5_t *d);
void cp_capture_state(uint64_t handle, int state, int arg_kind, uint64_t arg);
void cp_capture_stop(uint64_t handle);
void cp_capture_fini(uint64_t ctx);
void cp_capture_close(void);

#endif
