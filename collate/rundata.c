/*
 * rundata.c — helpers of the run data model (rundata.h): freeing, NCCL
 * event-type names, COLLPROF_HASH_BITS.
 */
#include "nccl_profiler_abi.h"
#include "rundata.h"
#include "pset.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cp_rank_data_free(cp_rank_data *r) {
  if (!r) return;
  for (size_t i = 0; i < r->npaths; i++) { free(r->paths[i].path); free(r->paths[i].leaf_func); free(r->paths[i].sizes); }
  for (size_t i = 0; i < r->nlate; i++) { free(r->late[i].path); free(r->late[i].leaf_func); free(r->late[i].sizes); }
  free(r->paths); free(r->late); free(r->comms); free(r->command); free(r->file);
  memset(r, 0, sizeof *r);
}

void cp_run_free(cp_run *run) {
  if (!run) return;
  for (size_t i = 0; i < run->nranks; i++) cp_rank_data_free(&run->ranks[i]);
  free(run->ranks); free(run->dir);
  memset(run, 0, sizeof *run);
}

void cp_summary_free(cp_summary *s) {
  if (!s) return;
  free(s->hosts); free(s->comms);
  for (size_t i = 0; s->frozen && i < s->nfrozen; i++) free(s->frozen[i].ranges);
  free(s->frozen);
  free(s->sized);
  cp_sumstore_free(s->owner);           /* paths and strings */
  free(s->coll.bytes_sent); free(s->coll.bytes_recv);
  memset(s, 0, sizeof *s);
}

const cp_size_sum *cp_summary_sizes(const cp_summary *s, uint64_t id) {
  size_t lo = 0, hi = s->nsized;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (s->sized[mid].id < id) lo = mid + 1;
    else hi = mid;
  }
  return lo < s->nsized && s->sized[lo].id == id ? s->sized[lo].c : NULL;
}

const char *cp_type_long_name(uint32_t bit) {
  const char *n = ncclProfileTypeName(bit, 0);
  return n ? n : "";
}
const char *cp_type_short_name(uint32_t bit) {
  const char *n = ncclProfileTypeName(bit, 1);
  return n ? n : "";
}
uint32_t cp_type_from_name(const char *name) {
  if (!name) return 0;
  for (uint32_t b = 1; b <= ncclProfileKernelLaunch; b <<= 1)
    if (!strcmp(name, ncclProfileTypeName(b, 0)) || !strcmp(name, ncclProfileTypeName(b, 1))) return b;
  return 0;
}

void cp_gpu_rule_text(int n, int small, uint64_t small_bytes, char *buf, size_t len) {
  if (n <= 0) snprintf(buf, len, "off");
  else if (n == 1) snprintf(buf, len, "every API call");
  else if (small > 1 && small_bytes)
    snprintf(buf, len, "1 API call in %d, under %llu bytes 1 in %lld", n, (unsigned long long)small_bytes,
             (long long)n * small);
  else snprintf(buf, len, "1 API call in %d", n);
}

void cp_mask_names(uint32_t mask, char *buf, size_t len) {
  size_t n = 0;
  if (len) buf[0] = 0;
  for (int i = 0; i < 12 && len; i++) {
    if (!(mask & (1u << i))) continue;
    int w = snprintf(buf + n, len - n, "%s%s", n ? "," : "", ncclProfileTypeName(1u << i, 1));
    if (w < 0 || (size_t)w >= len - n) break;
    n += (size_t)w;
  }
}

int cp_hash_bits_env(void) {
  const char *e = getenv("COLLPROF_HASH_BITS");
  if (!e || !*e) return 64;
  char *end;
  long v = strtol(e, &end, 10);
  if (*end || v < 1 || v > 64) {
    fprintf(stderr, "collprof: COLLPROF_HASH_BITS=%s is not 1..64, using 64\n", e);
    return 64;
  }
  return (int)v;
}
