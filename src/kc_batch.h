/*
 * kc_batch.h — a proxy thread's KernelCh stops, gathered per parent into
 * one post.
 *
 * NCCL's proxy thread starts one KernelCh per channel under a Coll or P2p
 * of the application thread (24 on 2 H200 over NVLink for a small
 * all-reduce), then stops them one after another.  Each stop gives the
 * parent a reference back, its time and its GPU span.  The parent's pool
 * belongs to the application thread, so each of those went into the pool's
 * inbox as a post (pool_owner.h), and the application thread applied them
 * at its next event: per channel a post to read and a slot written by the
 * other core, on the thread whose time the user measures.  On 4 H200 with
 * every event on every call (test/gpu/overhead.sh), that was most of
 * collprof's excess over the do-nothing plugin: +1.48 us per call at 8 B to
 * 64 KiB, against +0.55 with collprof's KernelCh handling cut out, while
 * the same time spent on the proxy thread alone (the do-nothing plugin
 * spinning 150 ns per KernelCh start and stop) cost nothing.
 *
 * So a thread keeps one open batch: the parent its latest KernelCh linked
 * to by post.  A start under that parent counts one more child live; a
 * stop of one merges into the batch what it would have posted (references,
 * duration, span min/max, the slot-reuse verdict); the stop that brings
 * the live count to 0 posts the sum, once.  A start under another parent
 * posts what the open batch gathered so far and opens a new one; stops
 * under any parent but the open batch's post on their own, as before.  So
 * every child's part reaches its parent exactly once, in the order posts
 * are applied anyway (one producer, a FIFO inbox), and what changes is
 * only that the parent sees its KernelCh all at once, when the last of
 * them stopped.  A KernelCh that never stops keeps its batch open (its
 * parent's reference was never coming back either); the next parent's
 * first KernelCh posts what was gathered.
 *
 * Only parents that hold come here: those started before their pool saw a
 * KernelCh from another thread, and those of pools under
 * CP_KC_SPAN_MIN_SLOTS slots.  Once a pool has seen one, its Coll/P2p hold
 * nothing and the proxy thread gathers their spans itself, posting nothing
 * (parent_link.c, kc_span): what this batch still cost the application thread
 * (holds, blacklist entries, the post applied) was most of every event's
 * excess over the do-nothing plugin on 2 H200s.
 */
#ifndef COLLPROF_KC_BATCH_H
#define COLLPROF_KC_BATCH_H
#include <stdint.h>
#include "pool_owner.h"
#include "tls.h"

/* Post what the open batch gathered, if anything, and close it. */
static inline void cp_kcb_flush(cp_thr *t) {
  struct cp_kc_batch *b = &t->kcb;
  if (b->pool && (b->nref | b->nkch | b->bad | (b->dur != 0))) {
    const cp_post m = {.idx = b->idx, .gen = b->gen, .op = CP_POST_UNREF,
                       .flags = (uint8_t)(b->bad ? CP_POSTF_BAD : 0), .nkch = (uint16_t)b->nkch,
                       .nref = b->nref, .dur = b->dur, .gs = b->gs, .ge = b->ge};
    cp_pool_post(b->pool, &m);
  }
  memset(b, 0, sizeof *b);
}

/* A KernelCh started under parent (idx, gen) of pool p, linked by post. */
static inline void cp_kcb_open(cp_thr *t, cp_pool *p, uint32_t idx, uint32_t gen) {
  struct cp_kc_batch *b = &t->kcb;
  if (b->pool == p && b->idx == idx && b->gen == gen) {
    b->live++;
    return;
  }
  cp_kcb_flush(t);
  b->pool = p;
  b->idx = idx;
  b->gen = gen;
  b->live = 1;
}

/* A KernelCh under parent (idx, gen) of pool p stopped, giving what a post
 * would carry.  1: merged into the open batch (posted once the batch's
 * last child stopped); 0: not this batch's, post it alone. */
static inline int cp_kcb_take(cp_thr *t, cp_pool *p, uint32_t idx, uint32_t gen, int took_ref, uint64_t dur,
                              int kch, int bad, uint64_t gs, uint64_t ge) {
  struct cp_kc_batch *b = &t->kcb;
  if (b->pool != p || b->idx != idx || b->gen != gen || b->live == 0) return 0;
  b->nref += took_ref != 0;
  b->dur += dur;
  if (bad) b->bad = 1;
  else if (kch) {
    if (b->nkch == 0 || gs < b->gs) b->gs = gs;
    if (b->nkch == 0 || ge > b->ge) b->ge = ge;
    b->nkch++;
  }
  if (--b->live == 0 || b->nkch == UINT16_MAX) cp_kcb_flush(t);
  return 1;
}
#endif
