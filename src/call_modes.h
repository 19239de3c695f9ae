/*
 * call_modes.h — what each API call records: timed, untimed, counted or
 * off, decided at its GroupApi start on its thread and inherited by its
 * events through their handles (host sampling, below).  Used by the start
 * callbacks (event_start.c), which decide and follow the decision, and by
 * the stop callbacks (event_stop.c: a counted path asks for a time; the
 * next call may be lean).  Static inline, as on the one-file plugin: it
 * runs at every GroupApi.
 */
#ifndef COLLPROF_CALL_MODES_H
#define COLLPROF_CALL_MODES_H
#include "callback_core.h"
#include "host_sample.h"
#include "launch_timer.h"
#include "mask_control.h"
#include "profile.h"
#pragma GCC visibility push(hidden)

/* Host sampling (COLLPROF_HOST_SAMPLE=N).
 * Counting an event needs its path and nothing else; timing and tracing it
 * need the clock twice, a slot, a parent link and a trace record, which is
 * where nearly all of a callback's cost goes (share/doc/performance.md,
 * "`make bench`").  With N > 1 each application thread times and traces one API
 * call in N (a random one of each block of N, so that no period of the
 * application's calls lines up with the sampling) and counts the others:
 * the whole event tree of a counted call gets no slot, no clock read and
 * no trace record, only a count (calls, bytes, size class) on its path.
 * Counts stay exact; a path's total and self time become estimates, the
 * timed events' times times calls / timed (snapshot.c), and the summary
 * says so.  The default, auto, takes each block's N from the thread's call
 * rate and gives each timed event the weight N (host_sample.h): the slot
 * type carries its log2 to the stop (slot_type).
 *
 * The decision is taken at each GroupApi start, the root of an API call on
 * its thread, and inherited: a counted event's handle has generation 0
 * (never that of a slot, handle.h) and still carries its path, so its
 * children are counted too and keep their paths; a Group (no parent)
 * follows its thread's decision.  Three kinds of call:
 *   timed    (HS_TIMED)    one in N, and the call after one that counted a
 *                          path this thread never timed (every path gets a
 *                          time early, as with GPU sampling);
 *   untimed  (HS_UNTIMED)  a call that runs with KernelCh on (GPU sampling)
 *                          but is not due for timing: counted, but for its
 *                          Coll/P2p, which are recorded (with what NCCL
 *                          starts under them: KernelCh, proxy events) since
 *                          their KernelCh need their slot, and traced, but
 *                          counted without host times, which are not those
 *                          of a typical call (a Coll of a KernelCh call
 *                          stops when its kernel ends, not when it was
 *                          enqueued: ABI doc), so the timed ones stay an
 *                          unbiased sample.  Its counted handles carry
 *                          CP_UNT_BIT, which tells their Coll/P2p children;
 *   counted  (HS_COUNTED)  the rest.
 * Threads that start no GroupApi (NCCL's proxy thread, v4) time all their
 * own events; a proxy event under a counted Coll is counted with it.
 * Known limits: a counted event cannot be told stopped twice; a launch
 * timed by the launch timer (launch_timer.h) may name a counted Coll in
 * its trace record.
 *
 * A fourth kind, off (HS_OFF), is a call made while recording is off
 * (collprof_pause, outside a COLLPROF_PERIODS window: cp_hot.off, set by
 * profiling_windows.c), decided at the same point and inherited the same way:
 * its events get a handle of generation 0 with CP_OFF_BIT and no path,
 * nothing is counted or recorded, and only its GroupApi reaches the mask
 * control (a graph capture or a second calling thread still freezes the
 * mask; the group's stop still closes it).  An off event is left before
 * its path is looked up, so a paused call adds no path either.
 *
 * A counted call may also be lean (mask_control.c, "Lean calls"): NCCL
 * read the lean mask for it (hs_decide sees that mask, t->lean), so it
 * sends the API events alone.  Its counted handles carry CP_LEAN_BIT; its
 * CollApi/P2pApi count the Coll/P2p too (start_lean, lean_derive).  Whether
 * the next call may be lean is this thread's answer at each GroupApi stop
 * (lean_next_ok). */
enum { HS_TIMED = 0, HS_UNTIMED = 1, HS_COUNTED = 2, HS_OFF = 3 };
/* On a recorded slot's type: counted without its host times. */
#define CP_SLOT_UNTIMED 0x8000u

static inline uint32_t hs_rand(cp_thr *t) {
  uint32_t x = t->hs_rand;
  if (UNLIKELY(!x)) x = (uint32_t)cp_thr_seed(t) | 1u;   /* xorshift32: never 0 */
  x ^= x << 13; x ^= x >> 17; x ^= x << 5;
  return t->hs_rand = x;
}

/* A path this thread counted without a time (calls == untimed): time the
 * next API calls until one of them has timed it, at most CP_HS_FORCE_CALLS
 * of them, so that every path gets a time early even where host sampling
 * would leave it none (COLLPROF_HOST_SAMPLE=0, or auto before its block
 * comes round).  The next call is not always of the asking path's kind: in
 * a loop of two kinds of call in turn it never is, and forcing only the
 * next one timed the other kind at every call while the asking path got
 * no time at all.  One path is served at a time, and a path asks only at
 * its first CP_HS_FORCE_ASKS counts: one that no call can time costs
 * nothing, one whose calls are timed elsewhere at most that many rounds.
 * The counting start only notes the path (hs_ask: two stores, no call,
 * so the counted starts keep no register across one); the next GroupApi
 * takes it up (hs_forced). */
#define CP_HS_FORCE_CALLS 8
#define CP_HS_FORCE_ASKS 4
#define CP_HS_ASKED 64   /* in hs_force: hs_ask holds a path that asked */
static inline __attribute__((always_inline)) void hs_ask(cp_thr *t, const cp_prof_ent *pe) {
  t->hs_ask = pe;
  t->hs_force |= CP_HS_ASKED;
}
/* At a GroupApi with hs_force set: whether this call is forced timed. */
static __attribute__((noinline, unused)) int hs_forced(cp_thr *t) {
  if (t->hs_force & CP_HS_ASKED) {
    const cp_prof_ent *a = t->hs_ask;
    t->hs_force &= ~CP_HS_ASKED;
    if (!t->hs_force && cp_ld(&a->untimed) <= CP_HS_FORCE_ASKS) {
      t->hs_force_pe = a;
      t->hs_force = CP_HS_FORCE_CALLS;
    }
  }
  if (!t->hs_force) return 0;
  const cp_prof_ent *pe = t->hs_force_pe;
  if (cp_ld(&pe->calls) != cp_ld(&pe->untimed)) {   /* timed since */
    t->hs_force = 0;
    return 0;
  }
  t->hs_force--;
  return 1;
}

/* At each GroupApi start (both start paths, once per GroupApi): whether
 * this call has KernelCh on (t->sampled, mask_control.h; 2 = a first-call
 * sample) and what is recorded of it. */
static inline __attribute__((always_inline)) void hs_decide(cp_thr *t) {
  if (UNLIKELY(atomic_load_explicit(&cp_hot.off, memory_order_relaxed))) {
    t->sampled = 0;
    t->hs_mode = HS_OFF;
    return;
  }
  const uint32_t mask = cp_mask_now();   /* what NCCL read for this call */
  t->sampled = (int8_t)(mask & ncclProfileKernelCh ? 1 + cp_mask_sample_first() : 0);
  t->lean = t->hs_cls = 0;
  const int n = cp_plug.host_sample;
  if (LIKELY(n == 1)) { t->hs_mode = HS_TIMED; return; }
  int timed = 0;
  if (n != 0) {
    if (t->hs_n == 0) {   /* a new block: auto takes its size from the rate */
      if (n < 0) t->hs_lg = cp_hs_auto_lg(cp_plug.hs_target_ns, t->hs_gap);
      t->hs_blk = n < 0 ? 1u << t->hs_lg : (uint32_t)n;
      t->hs_pos = t->hs_blk > 1 ? hs_rand(t) % t->hs_blk : 0;
    }
    timed = t->hs_n == t->hs_pos;
    if (++t->hs_n >= t->hs_blk) t->hs_n = 0;
    t->hs_calls++;
  }
  /* the block's sample weighs N (host_sample.h); a forced extra one 1 */
  t->hs_wlg = (int8_t)(timed && n < 0 ? t->hs_lg : 0);
  if (UNLIKELY(t->hs_force)) timed |= hs_forced(t);
  t->hs_mode = (int8_t)(timed ? HS_TIMED : t->sampled ? HS_UNTIMED : HS_COUNTED);
  /* A lean call: NCCL sends no Coll/P2p to time (lean_next_ok asked for
   * one only where this call was not to be timed; should the mask have
   * been changed by another thread since, it is counted all the same). */
  if (UNLIKELY(cp_mask_lean_value(mask))) {
    t->lean = 1;
    t->hs_mode = HS_COUNTED;
    t->hs_wlg = 0;
    cp_inc(&t->lean_calls, 1);
  } else if (t->hs_mode == HS_COUNTED) {
    /* counted, not lean, while lean calls are on: CP_CLS_BIT */
    t->hs_cls = (int8_t)atomic_load_explicit(&cp_hot.lean_live, memory_order_relaxed);
  }
}

/* At a GroupApi stop of this thread: whether its next call may be lean,
 * i.e. will be only counted (hs_decide's block arithmetic says not timed,
 * no path waits to be timed) and the launch timer will not want its
 * KernelLaunch (no run open, its countdown not at a large call's turn).
 * A block's first call has its sample not drawn yet: not lean. */
static inline int lean_next_ok(const cp_thr *t) {
  if (LIKELY(!cp_mask_lean_on())) return 0;
  const int n = cp_plug.host_sample;
  if (n == 1 || t->hs_force) return 0;
  if (n != 0 && (t->hs_n == 0 || t->hs_n == t->hs_pos)) return 0;
  if (cp_lt_every && (t->lt_cur != 0 || (t->lt_left == 0 && t->lt_big))) return 0;
  return 1;
}

/* hs_decide, unless start_group_api made this GroupApi's decision before
 * it handed the start on (hs_predecided: one decision per call). */
static inline __attribute__((always_inline)) void hs_decide_once(cp_thr *t) {
  if (UNLIKELY(t->hs_predecided)) t->hs_predecided = 0;
  else hs_decide(t);
}

/* auto: a recorded call's GroupApi started at now; the calls since the
 * last recorded one give the rate (host_sample.h). */
static inline void hs_note_start(cp_thr *t, uint64_t now) {
  /* a span over a time recording was off (pause, outside a window) is no
   * gap between calls: start afresh from this call */
  const uint32_t ep = atomic_load_explicit(&cp_hot.off_epoch, memory_order_relaxed);
  if (UNLIKELY(ep != t->hs_epoch)) t->hs_epoch = ep;
  else if (t->hs_last_ns && now > t->hs_last_ns)
    t->hs_gap = cp_hs_gap_update(t->hs_gap, now - t->hs_last_ns, t->hs_calls);
  t->hs_last_ns = now;
  t->hs_calls = 0;
}

/* What a recorded event's slot type carries besides NCCL's type bit:
 * CP_SLOT_UNTIMED, or the log2 of a timed event's weight in bits 12-14
 * (auto; never on a KernelCh, which the proxy thread starts and whose
 * type the pool compares as is). */
#define CP_SLOT_TYPE_BITS 0x0FFFu
#define CP_SLOT_WLG_SHIFT 12
static inline uint16_t slot_type(const cp_thr *t, uint32_t type) {
  if (t->hs_mode == HS_UNTIMED) return (uint16_t)(type | CP_SLOT_UNTIMED);
  return (uint16_t)(type | (type != ncclProfileKernelCh ? (uint32_t)t->hs_wlg << CP_SLOT_WLG_SHIFT : 0));
}

/* A root event of this thread's call (GroupApi, Group) is counted, or off:
 * in every call but a timed one (an untimed call records its Coll/P2p
 * alone: untimed_coll). */
static inline int hs_counted_root(const cp_thr *t, uint32_t type) {
  return t->hs_mode != HS_TIMED && (type & (ncclProfileGroupApi | ncclProfileGroup));
}
/* The slot bits a counted root's handle carries: CP_UNT_SLOT in an
 * untimed call, CP_LEAN_SLOT in a lean one, CP_CLS_SLOT (callback_core.h),
 * inherited by its counted children. */
static inline uint32_t hs_root_xslot(const cp_thr *t) {
  return t->hs_mode == HS_UNTIMED ? CP_UNT_SLOT : t->lean ? CP_LEAN_SLOT : t->hs_cls ? CP_CLS_SLOT : 0;
}
/* A child of counted parent handle pobj that is recorded all the same: a
 * Coll/P2p of an untimed call, since its KernelCh need its slot (the rest
 * of that call is counted). */
static inline int untimed_coll(uint64_t pobj, uint32_t type) {
  return (pobj & CP_UNT_BIT) && (type & (ncclProfileColl | ncclProfileP2p));
}
/* A root event while recording is off: GroupApi and Group by their call's
 * decision, any other root (ProxyCtrl) by the flag now. */
static inline int hs_off_root(const cp_thr *t, uint32_t type) {
  return (type & (ncclProfileGroupApi | ncclProfileGroup)) ? t->hs_mode == HS_OFF
                                                           : atomic_load_explicit(&cp_hot.off, memory_order_relaxed);
}

#pragma GCC visibility pop
#endif
