/*
 * test_paths.c — the call-path table (src/paths.c) and what the plugin
 * builds with it: canonical strings, dense ids, hash = XXH3_64bits of the
 * string (computed here with libxxhash directly), O(1) lookup (a 20x larger
 * table must not make lookups slower in proportion), UnknownParent and PXN
 * roots, the CUDA-graph case (a parent handle whose slot was reused long
 * ago still gives the right path), v4 paths, bytes and self time; a new
 * thread's new paths and strings make it no malloc arena (src/bump.h).
 */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <xxhash.h>
#include "tap.h"
#include "h1_util.h"
#include "paths.h"
#include "strtab.h"
#include "mask_control.h"
#include "bump.h"
#include "tls.h"

static uint64_t mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t ar;
static uint32_t other_thread_id;
static void *lookup_other(void *a) {
  (void)a;
  uint32_t g = cp_path_child(CP_PATH_NONE, ncclProfileGroupApi, 0);
  other_thread_id = cp_path_child(cp_path_child(g, ncclProfileCollApi, ar), ncclProfileColl, ar);
  return NULL;
}

static double lookup_ns(uint32_t parent, uint32_t type, uint32_t func) {
  double best = 1e9;
  volatile uint32_t sink = 0;
  for (int r = 0; r < 20; r++) {
    uint64_t t0 = mono();
    for (int i = 0; i < 10000; i++) sink += cp_path_child(parent, type, func);
    double per = (double)(mono() - t0) / 10000.0;
    if (per < best) best = per;
  }
  (void)sink;
  return best;
}

static void test_table(void) {
  uint32_t n0 = cp_path_count();
  ar = cp_str_intern("AllReduce");
  uint32_t g = cp_path_child(CP_PATH_NONE, ncclProfileGroupApi, ar);
  uint32_t c = cp_path_child(g, ncclProfileCollApi, ar);
  uint32_t co = cp_path_child(c, ncclProfileColl, ar);
  uint32_t k = cp_path_child(co, ncclProfileKernelCh, 0);
  is_s(cp_path_str(g), "GroupApi", "root element, func dropped for GroupApi");
  is_s(cp_path_str(c), "GroupApi/CollApi:AllReduce", "CollApi shows its func");
  is_s(cp_path_str(k), "GroupApi/CollApi:AllReduce/Coll:AllReduce/KernelCh", "canonical string root first");
  ok(g == n0 && c == n0 + 1 && co == n0 + 2 && k == n0 + 3, "ids dense, in creation order");
  is_u(cp_path_child(co, ncclProfileKernelCh, ar), k, "func ignored for KernelCh");
  is_u(cp_path_child(g, ncclProfileCollApi, cp_str_intern("AllReduce")), c, "same element, same id");
  pthread_t t;
  pthread_create(&t, NULL, lookup_other, NULL);
  pthread_join(t, NULL);
  is_u(other_thread_id, co, "another thread (cold cache) finds the same id");
  const char *s = cp_path_str(k);
  is_u(cp_path_hash(k), XXH3_64bits(s, strlen(s)), "hash is XXH3_64bits of the string");
  is_u(cp_path_type(k), ncclProfileKernelCh, "leaf type");
  is_u(cp_path_func(co), ar, "leaf func");
  is_u(cp_path_parent(k), co, "parent id");
  uint32_t u = cp_path_child(CP_PATH_UNKNOWN, ncclProfileColl, ar);
  is_s(cp_path_str(u), "UnknownParent/Coll:AllReduce", "UnknownParent element");
  uint32_t x = cp_path_child(CP_PATH_PXN, ncclProfileProxyOp, cp_str_intern("Send"));
  is_s(cp_path_str(x), "PXN/ProxyOp:Send", "PXN root element");
  is_s(cp_path_str(cp_path_child(x, ncclProfileProxyStep, 0)), "PXN/ProxyOp:Send/ProxyStep", "PXN child");
  ok(cp_path_child(CP_PATH_NONE, 3, 0) == CP_PATH_NONE && cp_path_child(CP_PATH_NONE, 4096, 0) == CP_PATH_NONE,
     "invalid type bits give no path");
  ok(!cp_path_gpu_seen(co), "no GPU sample yet");
  cp_path_mark_gpu(co);
  ok(cp_path_gpu_seen(co) && cp_path_gpu_seen(c) && cp_path_gpu_seen(g) && !cp_path_gpu_seen(k),
     "marking a Coll marks it and its ancestors");

  /* O(1): lookup time does not grow with the table */
  double small = lookup_ns(c, ncclProfileColl, ar);
  char name[32];
  for (int i = 0; i < 4000; i++) {
    snprintf(name, sizeof name, "Func%d", i);
    cp_path_child(g, ncclProfileCollApi, cp_str_intern(name));
  }
  double big = lookup_ns(c, ncclProfileColl, ar);
  diag("lookup %.1f ns with %u paths, %.1f ns with %u paths", small, n0 + 13, big, cp_path_count());
  ok(big < 4 * small + 20, "lookup cost independent of table size");
}

static void test_plugin(void) {
  void *ctx = h1_init(555, 0);
  void *ga = h1_start(ctx, ncclProfileGroupApi, NULL, NULL);
  void *ca = h1_start(ctx, ncclProfileCollApi, ga, "AllReduce");
  void *gr = h1_start(ctx, ncclProfileGroup, NULL, NULL);
  ncclProfiler_v5.stopEvent(ca);
  /* CUDA graph: many events reuse every slot (pool 4), then Colls name the
   * capture-time CollApi handle */
  for (int i = 0; i < 50; i++) ncclProfiler_v5.stopEvent(h1_start(ctx, ncclProfileKernelLaunch, NULL, NULL));
  for (int i = 0; i < 3; i++) {
    void *co = h1_start(ctx, ncclProfileColl, ca, "AllReduce");
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
    void *k = h1_start_kch(ctx, co, 5000);
    h1_kch_stop(k, 6000);
    ncclProfiler_v5.stopEvent(co);
  }
  ncclProfiler_v5.stopEvent(gr);
  ncclProfiler_v5.stopEvent(ga);
  void *un = h1_start(ctx, ncclProfileColl, (void *)0x7f0000001000ULL, "Broadcast");
  ncclProfiler_v5.stopEvent(un);
  void *p2 = h1_start(ctx, ncclProfileP2p, NULL, "Send");
  ncclProfiler_v5.stopEvent(p2);

  /* v4: Coll under Group */
  void *ctx4 = NULL;
  int mask = 0;
  ncclProfiler_v4.init(&ctx4, &mask, "v4", 42, 1, 2, 0, NULL);
  ncclProfilerEventDescr_v4_t d4;
  memset(&d4, 0, sizeof d4);
  d4.type = ncclProfileGroup;
  void *g4 = NULL, *c4 = NULL;
  ncclProfiler_v4.startEvent(ctx4, &g4, &d4);
  memset(&d4, 0, sizeof d4);
  d4.type = ncclProfileColl;
  d4.parentObj = g4;
  d4.coll.func = "ReduceScatter";
  d4.coll.count = 10;
  d4.coll.datatype = "ncclBfloat16";
  ncclProfiler_v4.startEvent(ctx4, &c4, &d4);
  ncclProfiler_v4.stopEvent(c4);
  ncclProfiler_v4.stopEvent(g4);

  collprof_snapshot s;
  collprof_snapshot_take(&s);
  const collprof_path_stat *pg = h1_find(&s, "GroupApi/CollApi:AllReduce/Coll:AllReduce");
  ok(pg && pg->calls == 3, "graph replays: Colls under a long-reused CollApi handle keep the path");
  const collprof_path_stat *pk = h1_find(&s, "GroupApi/CollApi:AllReduce/Coll:AllReduce/KernelCh");
  ok(pk && pk->calls == 3, "their KernelCh children too");
  ok(pg && pg->bytes == 3 * 8 * 4, "bytes = count x sizeof(ncclFloat32), summed");
  ok(pg && pg->gpu_samples == 3 && pg->gpu_ns == 3000, "one GPU span per Coll");
  ok(pg && pg->self_ns < pg->total_ns && pg->total_ns >= 3 * 200000,
     "self time excludes the KernelCh children inside (self %llu < total %llu)",
     pg ? (unsigned long long)pg->self_ns : 0ULL, pg ? (unsigned long long)pg->total_ns : 0ULL);
  ok(pg && pg->min_ns <= pg->max_ns && pg->min_ns > 0, "min <= max");
  const collprof_path_stat *pu = h1_find(&s, "UnknownParent/Coll:Broadcast");
  ok(pu && pu->calls == 1, "a parent that is not our handle gives UnknownParent/...");
  ok(s.unknown_parent >= 1, "and is counted (%llu)", (unsigned long long)s.unknown_parent);
  const collprof_path_stat *pp = h1_find(&s, "P2p:Send");
  ok(pp && pp->bytes == 8, "P2p bytes with ncclInt8");
  const collprof_path_stat *p4 = h1_find(&s, "Group/Coll:ReduceScatter");
  ok(p4 && p4->calls == 1 && p4->bytes == 20, "v4: Coll under its Group, bytes with ncclBfloat16");
  const collprof_path_stat *pgr = h1_find(&s, "Group");
  ok(pgr && pgr->calls >= 1 && pgr->leaf_type == ncclProfileGroup, "root Group path");
  int sorted = 1;
  for (size_t i = 0; i < s.npaths; i++) if (s.paths[i].local_id != i) sorted = 0;
  ok(sorted, "snapshot paths indexed by local id");
  ok(s.per_event_cost_ns > 0, "per-event self cost measured at first init (%.1f ns)", s.per_event_cost_ns);
  collprof_snapshot_free(&s);
}

/* glibc's malloc arenas (malloc_info's heaps): a thread's first malloc
 * makes one of its own */
static int arenas(void) {
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  if (!f) return -1;
  malloc_info(0, f);
  fclose(f);
  int k = 0;
  for (char *p = buf; (p = strstr(p, "<heap nr=")) != NULL; p++) k++;
  free(buf);
  return k;
}
static uint32_t new_ids[40], new_root;
static void *new_paths(void *a) {
  (void)a;
  char name[32];
  const uint32_t g = new_root;
  for (int i = 0; i < 40; i++) {
    snprintf(name, sizeof name, "NewFunc%d", i);
    new_ids[i] = cp_path_child(g, ncclProfileCollApi, cp_str_intern(name));
  }
  return NULL;
}
/* A thread of NCCL's making new paths and strings (its first events)
 * makes no malloc arena (bump.h): their texts come from chunks made ahead. */
static void test_no_arena(void) {
  cp_thr_prepare(64);   /* its block made ahead too, as at a communicator's init */
  cp_bump_prepare();
  /* the tables made by a first path and string on this thread (at a
   * communicator's init and the application's first GroupApi, in a job) */
  new_root = cp_path_child(CP_PATH_NONE, ncclProfileKernelLaunch, cp_str_intern("First"));
  const int before = arenas();
  pthread_t th;
  pthread_create(&th, NULL, new_paths, NULL);
  pthread_join(th, NULL);
  const int after = arenas();
  int fine = 1;
  for (int i = 0; i < 40; i++) {
    char want[64];
    snprintf(want, sizeof want, "KernelLaunch/CollApi:NewFunc%d", i);
    fine &= new_ids[i] != CP_PATH_NONE && strcmp(cp_path_str(new_ids[i]), want) == 0;
  }
  ok(fine, "40 new paths and strings made on a new thread: texts right");
  ok(before > 0 && after == before, "...and no malloc arena made for that thread (%d before, %d after)", before, after);
}

/* The per-thread string cache (strtab.h): one buffer, reused for other
 * texts, must give each text its own id at every length the entry holds
 * inline (1-15: each of cp_str_same_short's compares) and past it, however
 * small the change (first byte, a middle one, the last, the length). */
static void test_string_cache(void) {
  cp_thr *t = cp_thr_get();
  static char buf[64];
  int bad = 0, checks = 0;
  for (int len = 1; len <= 20; len++) {
    char want[64];
    for (int i = 0; i < len; i++) want[i] = (char)('a' + (i * 7 + len) % 26);
    want[len] = 0;
    memcpy(buf, want, (size_t)len + 1);
    const uint32_t id = cp_str_intern_t(t, buf);
    /* a hit, twice, by both ways in */
    if (cp_str_intern_t(t, buf) != id || cp_str_intern(buf) != id || strcmp(cp_str_get(id), want) != 0) bad++;
    checks++;
    /* change one byte (first, middle, last) or the length: another id */
    for (int k = 0; k < 4; k++) {
      memcpy(buf, want, (size_t)len + 1);
      if (k == 3) { buf[len] = 'z'; buf[len + 1] = 0; }
      else buf[k == 0 ? 0 : k == 1 ? len / 2 : len - 1] ^= 0x20;
      const uint32_t o = cp_str_intern_t(t, buf);
      if (o == id || strcmp(cp_str_get(o), buf) != 0 || cp_str_intern_t(t, buf) != o) bad++;
      checks++;
      memcpy(buf, want, (size_t)len + 1);   /* back: the first id again */
      if (cp_str_intern_t(t, buf) != id) bad++;
      checks++;
    }
    /* shorter, by cutting: a prefix is another text */
    if (len > 1) {
      buf[len - 1] = 0;
      if (cp_str_intern_t(t, buf) == id) bad++;
      checks++;
    }
  }
  is_u(bad, 0, "string cache: a reused buffer gives each text its id (%d checks, lengths 1-20)", checks);
}

int main(void) {
  h1_env("4");
  test_no_arena();   /* first: an exited thread's arena would be handed on */
  test_string_cache();
  test_table();
  test_plugin();
  return done_testing();
}
