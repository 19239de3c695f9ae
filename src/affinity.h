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

#endif
