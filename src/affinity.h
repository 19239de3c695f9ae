/*
 * affinity.h — start-up check of the process's CPU affinity (affinity.c).
 */
#ifndef COLLPROF_AFFINITY_H
#define COLLPROF_AFFINITY_H

/* Read the process's CPU affinity (first init only: a system call). */
void cp_affinity_probe(void);
/* A GPU sample was skipped or dropped: on a single CPU, say once why and
 * what to change (one "collprof:" line); otherwise nothing. */
void cp_affinity_gpu_lag(void);
/* A KernelCh's GPU times were dropped because more than `calls` later
 * KernelCh-on calls had started (NCCL's proxy fell behind: parent_link.h,
 * CP_KC_SLOT_TRUST): on a single CPU as above; with KernelCh on every
 * call, say once what that state costs NCCL and what avoids it; otherwise
 * nothing. */
void cp_affinity_kc_behind(unsigned calls);

#endif
