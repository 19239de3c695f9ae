/*
 * rundata.c — helpers of the run data model (rundata.h): freeing, NCCL
 * event-type names, COLLPROF_HASH_BITS.
 */
#include "rundata.h"
#include "pset.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cp_rank_data_free(cp_rank_data *r) {
  if (!r) return;
  for (size_t i = 0; i < r->npaths; i++) { free(r->paths[i].path); free(r->paths[i].leaf_func); }
  free(r->paths); free(r->comms); free(r->command); free(r->file);
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
  cp_sumstore_free(s->owner);           /* paths and strings */
  free(s->coll.bytes_sent); free(s->coll.bytes_recv);
  memset(s, 0, sizeof *s);
}

static const char *const short_names[12] = {
  "Group", "Coll", "P2p", "ProxyOp", "ProxyStep", "ProxyCtrl",
  "KernelCh", "NetPlugin", "GroupApi", "CollApi", "P2pApi", "KernelLaunch" };
static const char *const long_names[12] = {
  "ncclProfileGroup", "ncclProfileColl", "ncclProfileP2p", "ncclProfileProxyOp",
  "ncclProfileProxyStep", "ncclProfileProxyCtrl", "ncclProfileKernelCh",
  "ncclProfileNetPlugin", "ncclProfileGroupApi", "ncclProfileCollApi",
  "ncclProfileP2pApi", "ncclProfileKernelLaunch" };

static int bit_index(uint32_t bit) {
  for (int i = 0; i < 12; i++) if (bit == (1u << i)) return i;
  return -1;
}
const char *cp_type_long_name(uint32_t bit) { int i = bit_index(bit); return i < 0 ? "" : long_names[i]; }
const char *cp_type_short_name(uint32_t bit) { int i = bit_index(bit); return i < 0 ? "" : short_names[i]; }
uint32_t cp_type_from_name(const char *name) {
  if (!name) return 0;
  for (int i = 0; i < 12; i++)
    if (!strcmp(name, long_names[i]) || !strcmp(name, short_names[i])) return 1u << i;
  return 0;
}

void cp_mask_names(uint32_t mask, char *buf, size_t len) {
  size_t n = 0;
  if (len) buf[0] = 0;
  for (int i = 0; i < 12 && len; i++) {
    if (!(mask & (1u << i))) continue;
    int w = snprintf(buf + n, len - n, "%s%s", n ? "," : "", short_names[i]);
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
