/*
 * events.h — NCCL profiler event types as the launcher names them: parsing
 * `-e Coll,P2p,KernelCh` or `-e 0xfff` into NCCL_PROFILE_EVENT_MASK, and the
 * `--list-events` table.  Bit values are NCCL's (shared/docs/
 * nccl-profiler-abi.md), not the wrong ones of the original design notes.
 */
#ifndef COLLPROF_LAUNCHER_EVENTS_H
#define COLLPROF_LAUNCHER_EVENTS_H
#include <stdint.h>
#include <stdio.h>

#define CP_EVENT_ALL 0xfffu
#define CP_EVENT_KERNELCH 0x40u
/* The plugin's default: every type but KernelCh (KernelCh is sampled). */
#define CP_EVENT_DEFAULT (CP_EVENT_ALL & ~CP_EVENT_KERNELCH)
#define CP_GPU_SAMPLE_DEFAULT 16

/* Parse a mask: a number (decimal, 0x hex, 0 octal) or a comma-separated
 * list of type names (case-insensitive, optional "ncclProfile" prefix) and
 * the words "all", "default", "none".  Returns 0 and sets *mask, or -1 and
 * writes a message naming the bad item into err. */
int cp_events_parse(const char *s, uint32_t *mask, char *err, size_t errlen);

/* "Group,Coll,..." for a mask (bits without a name as 0x..), into buf. */
const char *cp_events_names(uint32_t mask, char *buf, size_t len);

/* The --list-events table. */
void cp_events_list(FILE *f);

#endif
