/*
 * lean_estimate.h — the proxy events that lean calls hid, estimated per
 * message-size class, on one rank.
 *
 * A lean call (mask_control.c, "Lean calls") has NCCL send its API events
 * alone: its Coll/P2p is still counted exactly, from its CollApi/P2pApi
 * (start_counted.c, lean_derive), but its ProxyOp, ProxyStep and NetPlugin never
 * come.  Their counts are estimated at snapshot time (snapshot.c) from the
 * calls that were not lean: those host sampling timed, those GPU sampling
 * ran with KernelCh, and the few counted with NCCL's full mask.
 *
 * One ratio for the whole path (events seen per call seen, times the
 * calls) is biased as soon as a path mixes sizes, since which calls are
 * not lean depends on their size and their order: small calls are GPU
 * sampled 16 times less often than large ones, and a decision reaches the
 * next call, whatever its size.  In a loop of 8 B and 1 MiB all-reduces
 * (4 and 16 ProxySteps a call; test/lean_mix.py on the ar_net capture)
 * the single ratio gave 0.5-0.7 of the ProxySteps.
 *
 * So the events seen are kept as they are, and only the lean calls' are
 * estimated, per log2 size class of the call's Coll/P2p as the GPU time
 * estimate is (gpu_estimate.h).  The Coll/P2p path's table counts per
 * class its lean calls and its calls seen: those not lean whose proxy
 * events carry the class -- a recorded call's (the slot takes it from the
 * Coll/P2p down: pool.h, acls), or a call counted while lean calls are on
 * (a block's first call, one the launch timer wants: its handles carry it,
 * CP_CLS_BIT in call_modes.h).  The proxy path's table counts per class its
 * events of those calls.  A class's events per call seen, times its lean
 * calls, are its hidden events; a class with lean calls but none seen
 * borrows its rate as a GPU-time class without samples borrows its mean
 * (cp_gcls_borrow: geometric between the nearest classes seen, flat beyond
 * them).  Events of calls counted while lean calls were off (a frozen
 * mask) are seen and exact, and stand in no rate.  Left to the single
 * ratio: PXN proxy events (their call was another process's), and a path
 * whose Coll/P2p has no call seen.
 *
 * On the ar_net capture's sweep (8 B-1 MiB, most sizes once; 60 seeds,
 * --host-sample 16), ProxySteps: mean 186.6 for 182 (sd 12.6), against
 * 193.8 (sd 20.3) by the single ratio; linear borrowing gave 194.0 (sd
 * 17.8): step counts grow about geometrically with the size.
 */
#ifndef COLLPROF_LEAN_ESTIMATE_H
#define COLLPROF_LEAN_ESTIMATE_H
#include <stdint.h>
#include "gpu_estimate.h"

/* The estimated events of a proxy path over all its anchor's calls.
 *   anchor     the table of the nearest Coll/P2p path above it (lean calls
 *              and calls seen, per class)
 *   ev         the proxy path's table (its events of the calls seen, per class)
 *   ev_calls   the proxy path's events seen, of every call
 * Returns 1 with *est = ev_calls + the lean calls' estimated events, 0
 * when the tables give no estimate: no lean call, or none seen. */
int cp_lean_estimate(const cp_gcls *anchor, const cp_gcls *ev, uint64_t ev_calls, uint64_t *est);

#endif
