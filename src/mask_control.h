/*
 * mask_control.h — what NCCL is asked to emit, changed at run time.
 *
 * NCCL hands every init the address of one process-wide int and re-reads it
 * at each API call (ABI doc: a change reaches the next API call, never the
 * one in progress; at 0 no callback arrives at all).  This module owns that
 * int's value (mask_control.c, and a file per rule beside it: mask_state.h
 * lists them):
 *   - GPU sampling: KernelCh, the one expensive type, is switched on for one
 *     API call in N (COLLPROF_GPU_SAMPLE), and for the next call after a
 *     call on a path that has no GPU sample yet; switched only where no
 *     group is open, and frozen by a CUDA graph capture;
 *   - profiling periods (COLLPROF_PERIODS=delay:duration[:repeat]) and the
 *     application's pause (collprof_pause/collprof_resume): outside a window
 *     or paused, NCCL is asked for GroupApi alone (0 when KernelCh is never
 *     sampled) and nothing is recorded; a timer thread flips the periods.
 * The callbacks (start_common.h, start_counted.c, event_stop.c) call the
 * hooks below; they are O(1) and lock-free.
 */
#ifndef COLLPROF_MASK_CONTROL_H
#define COLLPROF_MASK_CONTROL_H
#include <stdint.h>

/* At each communicator init: remember NCCL's mask pointer and store the
 * mask in effect now.  Returns the mask written. */
uint32_t cp_mask_attach(int *eActivationMask);

/* At the start of every API-level event (v5: CollApi/P2pApi; v4, which has
 * no API events: Coll/P2p).  `path` is the event's local path id, `sampled`
 * whether KernelCh was on when this call's mask was read (the caller
 * cannot know for sure; pass the value cp_mask_kernelch_on() had at the
 * preceding GroupApi start, or for v4 at this start), `bytes` the call's
 * count x datatype size (0: unknown; gpu_sample_rule.c, "Small calls").
 * Decides the mask for the next API call. */
void cp_mask_on_api_call(uint32_t path, int sampled, uint64_t bytes);

/* Around every GroupApi event (v5; NCCL starts one per outermost group, an
 * ungrouped call being a group of one).  The stop that closes the last open
 * group publishes the KernelCh decision: the only point where no NCCL call
 * can be half-way through a group (mask_control.c explains the hangs a
 * change inside a group causes).  A GroupApi from a thread other than the
 * first one's freezes the mask (cp_mask_on_graph_capture). */
void cp_mask_on_group_start(int tid);
/* lean_ok: the stopping thread's next call will be only counted, neither
 * host-timed nor launch-timed (call_modes.h, lean_next_ok), so that call may
 * be lean (mask_control.c, "Lean calls") unless KernelCh is wanted. */
void cp_mask_on_group_stop(int lean_ok);
/* Before the first attach, from the v4 init: no GroupApi events will come,
 * so N >= 2 cannot be honoured safely and becomes 0. */
void cp_mask_api_v4(void);

/* A graph-captured API call was seen (GroupApi/CollApi/P2pApi with
 * graphCaptured).  From then on the mask never changes again: NCCL 2.28
 * hangs in ncclCommDestroy when KernelCh differs between a graph's capture
 * and its replays (seen on H200 with a plugin that only flips the bit), so
 * sampling and profiling periods stop and KernelCh stays as it was when the
 * capture read it.  Once, with one line on stderr.  Idempotent. */
void cp_mask_on_graph_capture(void);
/* 1 once cp_mask_on_graph_capture froze the mask. */
int cp_mask_frozen(void);
/* Why and how it froze, for the rank record ("" if it did not), e.g.
 * "CUDA graph capture seen, KernelCh off".  With KernelCh off at a capture
 * NCCL 2.28 sends no Coll/P2p event for the graph's replays (no host
 * callback runs for them), so their calls are not counted. */
const char *cp_mask_frozen_text(void);

/* One sample in flight (sample_in_flight.c).  A Coll/P2p of a sampled
 * call expects n KernelCh events (its nChannels): returns the epoch to pass
 * to cp_mask_kc_done at each of their stops, 0 when N < 2 (nothing gated,
 * nothing to report). */
uint32_t cp_mask_kc_expect(uint32_t n);
void cp_mask_kc_done(uint32_t epoch);
/* One KernelCh of the sample in flight will never stop: NCCL 2.28's proxy,
 * when it reads a channel's work as ended before it read it as started,
 * stops the channel's previous KernelCh handle again instead (event_stop.c
 * sees that stop) and the current one is never started or never stopped.
 * With one sample in flight the lost event is that sample's: pay it back
 * now instead of holding sampling back for 100 ms. */
void cp_mask_kc_lost(void);
/* Samples skipped while an earlier sample's KernelCh were due, and
 * expectations dropped after 100 ms without a KernelCh stop. */
uint64_t cp_mask_samples_deferred(void);
uint64_t cp_mask_gate_resets(void);

/* COLLPROF_LEAN is in effect (set once the first attach ran). */
int cp_mask_lean_on(void);
/* Whether mask value v (read at a GroupApi start: NCCL read the same) is
 * the lean mask, i.e. the call is lean. */
int cp_mask_lean_value(uint32_t v);
/* NCCL's mask now (0 before the first attach). */
uint32_t cp_mask_now(void);
/* Whether the mask currently has KernelCh. */
int cp_mask_kernelch_on(void);
/* Whether the sample the mask now asks for is a first-call sample (call 0,
 * a forced sample, a window's first call: gpu_sample_rule.c), which the GPU
 * estimate counts once instead of extrapolating.  Read it with
 * cp_mask_kernelch_on() at a GroupApi start; 0 for N < 2. */
int cp_mask_sample_first(void);

/* API calls that ran with KernelCh on (for the summary). */
uint64_t cp_mask_sampled_calls(void);

/* Text describing the profiled windows so far, for the summary: seconds
 * after the first init, "0.050-0.100 0.150-0.200", an open one "12.000-open"
 * ("" when profiling was never off: no COLLPROF_PERIODS, never paused). */
const char *cp_mask_windows(void);
/* Its longest length, NUL included: the windows that do not fit (or
 * beyond the 64 remembered) end it as " (+K more)". */
#define CP_WINDOWS_TEXT 1024

/* collprof_pause (paused 1) and collprof_resume (0), from any thread at
 * any time, before the first init too (profiling_windows.c, "Pause"): returns
 * whether it was paused before.  cp_hot.off tells the callbacks. */
int cp_mask_set_paused(int paused);
int cp_mask_paused(void);

/* Stop the period timer thread (at shutdown; idempotent). */
void cp_mask_shutdown(void);

/* Does a path have a GPU sample yet?  Implemented by the path table
 * (paths.c): set when a Coll/P2p on that path got its first KernelCh. */
int cp_path_gpu_seen(uint32_t path);

/* At each communicator init, after cp_mask_attach, on the thread that
 * inits: its commId, for the start delay's default rule (start_delay.c:
 * none where every init of the process is of a distinct
 * commId and all are on one thread). */
void cp_mask_comm_id(uint64_t comm_id);

/* The start delay in ms as it ran (start_delay.c): the
 * configured one, or 0 where the default found one rank of each
 * communicator at the process's first group start. */
uint32_t cp_mask_start_delay_ms(void);

#endif
