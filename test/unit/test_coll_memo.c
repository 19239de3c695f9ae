/*
 * test_coll_memo.c — the recorded Coll's memo (src/coll_memo.h): a Coll
 * whose lookups the memo gives must be recorded exactly as one looked up
 * the long way.  Calls of Colls that differ from a base in one key field
 * each (func, datatype, algo and proto strings, count, parent path) and in
 * the fields that are no key (seq, root, channels, warps: taken from each
 * call's descriptor), three rounds so that the later ones find the memo;
 * also a string of the same text at another address (a miss that must
 * find the same ids).  Checks: each call's trace line has its own details,
 * exactly once, under its path; each path's calls and bytes in the
 * profile.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tap.h"
#include "h1_util.h"
#include "collprof.h"

typedef struct variant {
  const char *api, *func, *dt, *algo, *proto;
  uint64_t count, size;   /* elements, and the datatype's size */
} variant;

static char ring_copy[8];   /* "RING" at another address */

int main(void) {
  setenv("COLLPROF_TRACE", "1", 1);
  h1_env("64");
  strcpy(ring_copy, "RING");
  const variant v[] = {
      {"AllReduce", "AllReduce", "ncclFloat32", "RING", "LL", 8, 4},        /* the base */
      {"AllReduce", "AllReduce", "ncclFloat32", "TREE", "LL", 8, 4},        /* algo */
      {"AllReduce", "AllReduce", "ncclFloat32", "RING", "SIMPLE", 8, 4},    /* proto */
      {"AllReduce", "AllReduce", "ncclFloat64", "RING", "LL", 8, 8},        /* datatype */
      {"AllReduce", "AllReduce", "ncclFloat32", "RING", "LL", 16, 4},       /* count */
      {"AllReduce", "AllGather", "ncclFloat32", "RING", "LL", 8, 4},        /* func */
      {"Broadcast", "AllReduce", "ncclFloat32", "RING", "LL", 8, 4},        /* parent path */
      {"AllReduce", "AllReduce", "ncclFloat32", ring_copy, "LL", 8, 4},     /* the same text elsewhere */
  };
  enum { NV = sizeof v / sizeof v[0], ROUNDS = 2, NCNT = 9 };
  /* The base with NCNT counts (the base's among them): the count picks
   * the entry too, so among 9 counts two share one of the 8 entries;
   * every ordered pair of them follows each other once, and so do those
   * two. */
  variant cv[NCNT];
  for (int k = 0; k < NCNT; k++) cv[k] = v[0], cv[k].count = 8u * (uint64_t)(k + 1);
  enum { NCALLS = ROUNDS * (NV - 1) * 3 + NCNT * (NCNT - 1) * 2 };
  /* The calls: each variant right after the base, then again (a hit), so
   * that every key field is the one difference between a call and the
   * entry its slot holds (the variants of one func, count and parent
   * share a slot); then the count pairs. */
  const variant *order[NCALLS];
  int n = 0;
  for (int r = 0; r < ROUNDS; r++)
    for (int i = 1; i < NV; i++) order[n++] = &v[0], order[n++] = &v[i], order[n++] = &v[i];
  for (int a = 0; a < NCNT; a++)
    for (int b = 0; b < NCNT; b++)
      if (a != b) order[n++] = &cv[a], order[n++] = &cv[b];
  void *ctx = h1_init(0xC0115EEDull, 0);
  for (int c = 0; c < NCALLS; c++) {
    const variant *w = order[c];
    const uint64_t seq = 1000 + (uint64_t)c;
    void *ga = h1_start_n(ctx, ncclProfileGroupApi, NULL, NULL, 0);
    void *ca = h1_start_n(ctx, ncclProfileCollApi, ga, w->api, w->count);
    ncclProfilerEventDescr_v5_t d;
    memset(&d, 0, sizeof d);
    d.type = ncclProfileColl;
    d.parentObj = ca;
    d.coll.func = w->func;
    d.coll.datatype = w->dt;
    d.coll.algo = w->algo;
    d.coll.proto = w->proto;
    d.coll.count = w->count;
    d.coll.seqNumber = seq;             /* no key: each call's own */
    d.coll.root = (int)(seq % 5);
    d.coll.nChannels = (uint8_t)(1 + seq % 7);
    d.coll.nWarps = (uint8_t)(seq % 11);
    void *co = NULL;
    ncclProfiler_v5.startEvent(ctx, &co, &d);
    ncclProfiler_v5.stopEvent(co);
    ncclProfiler_v5.stopEvent(ca);
    ncclProfiler_v5.stopEvent(ga);
  }
  collprof_snapshot s;
  if (!ok(collprof_snapshot_take(&s) == 0, "snapshot")) return done_testing();
  /* per path: the calls and bytes its variants made */
  const char *paths[] = {"GroupApi/CollApi:AllReduce/Coll:AllReduce", "GroupApi/CollApi:AllReduce/Coll:AllGather",
                         "GroupApi/CollApi:Broadcast/Coll:AllReduce"};
  for (int p = 0; p < 3; p++) {
    uint64_t calls = 0, bytes = 0;
    for (int c = 0; c < NCALLS; c++) {
      const variant *w = order[c];
      char want[200];
      snprintf(want, sizeof want, "GroupApi/CollApi:%s/Coll:%s", w->api, w->func);
      if (strcmp(want, paths[p]) == 0) calls++, bytes += w->count * w->size;
    }
    const collprof_path_stat *st = h1_find(&s, paths[p]);
    ok(st && st->calls == calls && st->bytes == bytes, "%s: %llu calls, %llu bytes (got %llu, %llu)", paths[p],
       (unsigned long long)calls, (unsigned long long)bytes, st ? (unsigned long long)st->calls : 0ull,
       st ? (unsigned long long)st->bytes : 0ull);
  }
  collprof_snapshot_free(&s);
  ok(collprof_write_local() == 0, "rank file written");
  char file[4200];
  snprintf(file, sizeof file, "%s/pid%d.jsonl", collprof_output_dir(), (int)getpid());
  int bad = 0;
  for (int c = 0; c < NCALLS; c++) {
    const variant *w = order[c];
    const uint64_t seq = 1000 + (uint64_t)c;
    char want[400];
    snprintf(want, sizeof want,
             "\"details\":{\"func\":\"%s\",\"seq\":%llu,\"count\":%llu,\"datatype\":\"%s\",\"root\":%d,"
             "\"algo\":\"%s\",\"proto\":\"%s\",\"channels\":%d,\"nWarps\":%d}",
             w->func, (unsigned long long)seq, (unsigned long long)w->count, w->dt, (int)(seq % 5), w->algo,
             w->proto, (int)(1 + seq % 7), (int)(seq % 11));
    const int k = h1_file_lines(file, want);
    if (k != 1) {
      bad++;
      diag("call %d: %d lines with %s", c, k, want);
    }
  }
  is_u(bad, 0, "each of the %d Colls' trace line has its own details, once (%s)", NCALLS, file);
  ok(h1_file_lines(file, "\"type\":\"ncclProfileColl\"") == NCALLS, "and no other Coll line");
  ncclProfiler_v5.finalize(ctx);
  return done_testing();
}
