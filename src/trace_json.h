/*
 * trace_json.h — one cp_rec (trace.h) as one JSON line of the trace
 * (shared/docs/trace-format.md): event, state and lifecycle records.
 *
 * Owned by trace_json.c; called by the trace writer and by the signal-time
 * flush, so it is async-signal-safe as long as cp_str_get and
 * cp_registry_get are (they only read published tables).
 */
#ifndef COLLPROF_TRACE_JSON_H
#define COLLPROF_TRACE_JSON_H
#include <stddef.h>
#include <stdint.h>
#include "trace.h"

/* A formatted line never exceeds this (strings are cut to bounded sizes). */
#define CP_TRACE_JSON_MAX 4096

/* Format r as one line ending in '\n' into buf (at least
 * CP_TRACE_JSON_MAX bytes).  Returns the length. */
size_t cp_trace_json(const cp_rec *r, char *buf);

/* "ncclProfileColl" for 2, ... ; "" for a value that is not one bit of
 * NCCL's types. */
const char *cp_type_name(uint32_t type);

/* "ProxyStepSendWait" for 9, ...; NULL for a number without a name. */
const char *cp_state_name(uint32_t state);

#endif
