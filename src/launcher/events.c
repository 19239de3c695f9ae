/*
 * events.c — event-type names, bits and costs for the launcher (see
 * events.h).  The cost notes summarise what the ABI doc measured on H200s:
 * with an empty plugin only KernelCh slows NCCL down; the proxy types cost
 * nothing on the GPU but can fill the trace.
 */
#include "events.h"
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct cp_event_type {
  const char *name;
  uint32_t bit;
  const char *cost;
} cp_types[] = {
  {"Group", 0x1, "low: one per ncclGroupStart/End block"},
  {"Coll", 0x2, "low: one per collective per communicator"},
  {"P2p", 0x4, "low: one per send or receive"},
  {"ProxyOp", 0x8, "medium: one per channel and peer (network transports)"},
  {"ProxyStep", 0x10, "high volume: one per chunk step; large traces"},
  {"ProxyCtrl", 0x20, "low: proxy thread idle/active/sleep"},
  {"KernelCh", 0x40, "HIGH: GPU timestamps per channel; up to 4x slower"},
  {"NetPlugin", 0x80, "high volume: network plugin updates"},
  {"GroupApi", 0x100, "low: one per API call group (ancestor of all)"},
  {"CollApi", 0x200, "low: one per ncclAllReduce, ncclBroadcast, ..."},
  {"P2pApi", 0x400, "low: one per ncclSend/ncclRecv"},
  {"KernelLaunch", 0x800, "low: one per kernel launch"},
};
#define CP_NTYPES (sizeof cp_types / sizeof cp_types[0])

static int cp_word(const char *w, size_t n, uint32_t *bit) {
  if (n >= 11 && strncasecmp(w, "ncclProfile", 11) == 0) { w += 11; n -= 11; }
  for (size_t i = 0; i < CP_NTYPES; i++)
    if (strlen(cp_types[i].name) == n && strncasecmp(w, cp_types[i].name, n) == 0) {
      *bit = cp_types[i].bit;
      return 0;
    }
  static const struct { const char *w; uint32_t m; } words[] = {
    {"all", CP_EVENT_ALL}, {"default", CP_EVENT_DEFAULT}, {"none", 0}};
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strlen(words[i].w) == n && strncasecmp(w, words[i].w, n) == 0) {
      *bit = words[i].m;
      return 0;
    }
  return -1;
}

int cp_events_parse(const char *s, uint32_t *mask, char *err, size_t errlen) {
  if (!s || !*s) {
    snprintf(err, errlen, "empty event list");
    return -1;
  }
  if (isdigit((unsigned char)s[0])) {
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || *end || v > 0xffffffffull) {
      snprintf(err, errlen, "'%s' is not a 32-bit number", s);
      return -1;
    }
    *mask = (uint32_t)v;
    return 0;
  }
  uint32_t m = 0;
  const char *p = s;
  for (;;) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    while (n && isspace((unsigned char)*p)) { p++; n--; }
    while (n && isspace((unsigned char)p[n - 1])) n--;
    uint32_t bit;
    if (n == 0 || cp_word(p, n, &bit) != 0) {
      snprintf(err, errlen, "unknown event type '%.*s' (see --list-events)", (int)n, p);
      return -1;
    }
    m |= bit;
    if (!e) break;
    p = e + 1;
  }
  *mask = m;
  return 0;
}

const char *cp_events_names(uint32_t mask, char *buf, size_t len) {
  size_t o = 0;
  buf[0] = 0;
  for (size_t i = 0; i < CP_NTYPES && o < len; i++)
    if (mask & cp_types[i].bit)
      o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? "," : "", cp_types[i].name);
  if (mask & ~CP_EVENT_ALL && o < len)
    o += (size_t)snprintf(buf + o, len - o, "%s0x%x", o ? "," : "", mask & ~CP_EVENT_ALL);
  if (!mask) snprintf(buf, len, "none");
  return buf;
}

void cp_events_list(FILE *f) {
  fprintf(f, "NCCL profiler event types (bits of NCCL_PROFILE_EVENT_MASK):\n\n");
  fprintf(f, "  %-13s %6s %5s  %s\n", "name", "bit", "value", "cost");
  for (size_t i = 0; i < CP_NTYPES; i++)
    fprintf(f, "  %-13s %#6x %5u  %s\n", cp_types[i].name, cp_types[i].bit, cp_types[i].bit,
            cp_types[i].cost);
  fprintf(f,
          "\nNCCL also sends the ancestors an enabled type needs (GroupApi, CollApi, Group\n"
          "for Coll), even when their own bits are off.\n\n"
          "Default mask: %#x (%u): every type, KernelCh sampled on 1 call in %d.\n"
          "--gpu-sample N switches KernelCh on for 1 API call in N (1 = every call,\n"
          "0 = never); naming KernelCh in -e turns it on for every call.  KernelCh\n"
          "changes only when no group is open; a CUDA graph capture or a second\n"
          "calling thread freezes it (NCCL 2.28 hangs otherwise).\n",
          CP_EVENT_DEFAULT, CP_EVENT_DEFAULT, CP_GPU_SAMPLE_DEFAULT);
}
