/*
 * phase_timing.h — a diagnostic build that clocks each part of the
 * common-case callbacks on the thread that makes them:
 *
 *   make BUILD=build/phases CFLAGS=-DCP_PHASE_TIMING
 *
 * Why: on a GPU host collprof's callbacks on the application thread cost
 * 3-5x their hot-loop time (test/gpu/timed_plugin.c against make bench),
 * and neither the lines a callback touches nor its instructions explain
 * it alone (test/bench/lines_per_event.sh; overhead.sh's lines-I-D-*
 * configurations price a line).  This build reads the TSC (after an
 * lfence, so each part's loads have completed) between the parts of
 * start_fast, stop_body and cp_core_state and adds the difference to the
 * thread's sums; at exit every thread that made 1000 or more callbacks
 * prints one line on stderr:
 *   collprof-phases: pid P tid T: floor F ns per part; start N: entry x, descr x, ... = total | stop N: ... | state N: ...
 * in ns per callback, after the floor: what a part that does nothing
 * reads (the fences and the clock), to subtract from each.  The fences
 * make the whole slower than the plain build (they end the overlap of
 * one part's misses with the next), so compare parts with each other,
 * and the total with the timing wrapper's figure for the same build.
 * Only the common case is clocked: a state that goes to state_more or
 * state_kc_stop, or a start that falls back to start_general, is not.
 * In any other build the macros are empty.
 */
#ifndef COLLPROF_PHASE_TIMING_H
#define COLLPROF_PHASE_TIMING_H
#include <stdint.h>

/* The parts, in the order a callback passes them. */
enum {
  CP_PH_S_ENTRY, CP_PH_S_DESCR, CP_PH_S_PATH, CP_PH_S_CLOCK, CP_PH_S_ENTER, CP_PH_S_SLOT,
  CP_PH_S_TRACE, CP_PH_S_LEAVE, CP_PH_S_HOOKS,
  CP_PH_T_ENTRY, CP_PH_T_CLOCK, CP_PH_T_ENTER, CP_PH_T_PARENT, CP_PH_T_TRACE, CP_PH_T_RELEASE,
  CP_PH_T_PROFILE, CP_PH_T_HOOKS,
  CP_PH_U_ENTRY, CP_PH_U_COUNT, CP_PH_U_TRACE,
  CP_PH_CAL,   /* an empty part, timed at load: the floor */
  CP_PH_N
};

#ifdef CP_PHASE_TIMING
#include <x86intrin.h>
extern __thread uint64_t cp_ph_last;
/* Start clocking a callback (its first part begins here). */
#define CP_PH_BEGIN() (_mm_lfence(), cp_ph_last = __rdtsc())
/* The part that ended here; n: 1 to count a callback of its kind. */
#define CP_PH(i, n) cp_ph_add((i), (n))
void cp_ph_add(int i, int n);
/* Forget this thread's sums (after selfcost.c's own warm rounds). */
void cp_ph_reset(void);
#else
#define CP_PH_BEGIN() ((void)0)
#define CP_PH(i, n) ((void)0)
static inline void cp_ph_reset(void) {}
#endif

#endif
