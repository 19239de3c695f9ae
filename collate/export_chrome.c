/*
 * export_chrome.c — one Chrome trace-event JSON file for all ranks
 * (collprof-collate --chrome), for Perfetto UI and chrome://tracing.
 *
 * Process = rank (pid R+1, named "rank R (host, GPU ...)"), thread = OS
 * thread, every
 * event record a complete slice ("X"), state and lifecycle records instant
 * events ("i").  KernelCh slices go to one GPU track per device and channel,
 * at their GPU times (pTimer) moved onto the host clock with the
 * communicator's gpuOffsetNs.  All times are put on rank 0's clock with the
 * rank's clock record (offsetNs), so one collective lines up across ranks.
 *
 * Trace viewers want the slices of one track strictly nested; NCCL's proxy
 * events (steps of several channels in flight) are not, so each rank file
 * is read twice: pass 1 collects every slice's interval and track and gives
 * overlapping slices extra lanes (tracks named "... (overlap k)"), pass 2
 * re-reads the lines and writes them in file order.  Memory: 32 bytes per
 * event, not the events themselves.
 */
#include "export.h"
#include "rankfile_read.h"
#include "report.h"
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CP_MAX_LANES 256
#define CP_SYN_TID0 1000000000LL  /* synthetic tids (lanes, GPU tracks) start here */

typedef struct { int64_t start, end; uint32_t track, idx; } cp_span;

typedef struct {
  int gpu;                 /* 0 host thread, 1 GPU channel track */
  int64_t tid;             /* host: OS tid */
  char uuid[40];           /* GPU: device UUID ("" unknown) */
  int channel;
  int ctrl;                /* host: the ProxyCtrl track of the thread */
  int proxy, nonproxy;     /* host: saw proxy events / others */
  uint32_t nlanes;
  int64_t *lane_tid;       /* chrome tid of each lane */
} cp_track;

typedef struct {
  const cp_rank_data *r;
  const cp_summary *s;
  int64_t off;             /* clock offset to rank 0, ns */
  cp_track *tracks; size_t ntracks, captracks;
  cp_span *spans; size_t nspans, capspans;
  uint32_t *lane, *trk;    /* lane and track by span idx (file order) */
  int64_t *gid;            /* global id by local path id */
  const cp_path_rec **prec;/* path record by local path id */
  size_t ngid;
  int64_t next_syn;
} cp_rankx;

/* ---- reading ---- */

/* "ts" in microseconds -> ns; INT64_MIN (no time) for a value that has
 * none in range (a damaged line), as for one that is missing. */
static int64_t cp_j_ns(json_t *v) {
  int64_t ns;
  if (json_is_integer(v)) return __builtin_mul_overflow((int64_t)json_integer_value(v), 1000, &ns) ? INT64_MIN : ns;
  if (json_is_real(v)) {
    const double d = json_real_value(v) * 1000.0;
    return isfinite(d) && fabs(d) < 9.2e18 ? (int64_t)llround(d) : INT64_MIN;
  }
  return INT64_MIN;
}
static int64_t cp_j_int(json_t *o, const char *k, int64_t dflt) {
  json_t *v = json_object_get(o, k);
  if (json_is_integer(v)) return (int64_t)json_integer_value(v);
  if (json_is_real(v)) return (int64_t)llround(json_real_value(v));
  return dflt;
}
static const char *cp_j_str(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

static const char *cp_short(const char *type) {
  return strncmp(type, "ncclProfile", 11) == 0 ? type + 11 : type;
}

static const cp_comm_rec *cp_comm(const cp_rank_data *r, const char *comm_id) {
  char *end;
  errno = 0;
  unsigned long long id = strtoull(comm_id, &end, 10);
  if (errno || end == comm_id) return NULL;
  for (size_t i = 0; i < r->ncomms; i++)
    if (r->comms[i].comm_id == id) return &r->comms[i];
  return NULL;
}

/* One event record as the export places it. */
typedef struct {
  int64_t start, end;      /* aligned ns */
  int on_gpu;              /* placed by GPU times */
  int kernel_ch;
  int64_t tid;
  char uuid[40];
  int channel;
  int proxy, ctrl;
} cp_evpos;

static int cp_event_pos(cp_rankx *x, json_t *j, cp_evpos *p) {
  json_t *st = json_object_get(j, "start"), *sp = json_object_get(j, "stop");
  int64_t a = cp_j_ns(json_object_get(st, "ts")), b = cp_j_ns(json_object_get(sp, "ts"));
  if (a == INT64_MIN) return -1;
  if (b == INT64_MIN || b < a) b = a;
  const char *type = cp_short(cp_j_str(j, "type"));
  memset(p, 0, sizeof *p);
  p->tid = cp_j_int(st, "tid", 0);
  p->start = cp_add_sat(a, x->off);
  p->end = cp_add_sat(b, x->off);
  p->proxy = !strncmp(type, "Proxy", 5) || !strcmp(type, "NetPlugin");
  /* ProxyCtrl (idle/active periods) spans the proxy thread's other events:
   * a track of its own keeps both readable. */
  p->ctrl = !strcmp(type, "ProxyCtrl");
  if (strcmp(type, "KernelCh") != 0) return 0;
  p->kernel_ch = 1;
  json_t *d = json_object_get(j, "details");
  p->channel = (int)cp_j_int(d, "channelId", -1);
  snprintf(p->uuid, sizeof p->uuid, "%s", cp_j_str(j, "gpuUuid"));
  const cp_comm_rec *c = cp_comm(x->r, cp_j_str(j, "commId"));
  int64_t g0 = cp_j_int(d, "gpuStart", 0), g1 = cp_j_int(d, "gpuStop", 0);
  if (c && !p->uuid[0]) snprintf(p->uuid, sizeof p->uuid, "%s", c->gpu_uuid);
  if (c && c->gpu_offset_valid && g0 > 0 && g1 >= g0) {
    p->on_gpu = 1;
    p->start = cp_add_sat(cp_sub_sat(g0, c->gpu_offset_ns), x->off);
    p->end = cp_add_sat(cp_sub_sat(g1, c->gpu_offset_ns), x->off);
  }
  return 0;
}

static uint32_t cp_track_of(cp_rankx *x, const cp_evpos *p) {
  for (size_t i = x->ntracks; i-- > 0;) {
    cp_track *t = &x->tracks[i];
    if (p->kernel_ch ? (t->gpu && t->channel == p->channel && !strcmp(t->uuid, p->uuid))
                     : (!t->gpu && t->tid == p->tid && t->ctrl == p->ctrl)) {
      if (!p->kernel_ch) { t->proxy |= p->proxy; t->nonproxy |= !p->proxy; }
      return (uint32_t)i;
    }
  }
  if (x->ntracks == x->captracks) {
    size_t n = x->captracks ? x->captracks * 2 : 16;
    cp_track *t = realloc(x->tracks, n * sizeof *t);
    if (!t) return UINT32_MAX;
    x->tracks = t, x->captracks = n;
  }
  cp_track *t = &x->tracks[x->ntracks];
  memset(t, 0, sizeof *t);
  t->gpu = p->kernel_ch;
  t->tid = p->tid;
  t->channel = p->channel;
  t->ctrl = p->ctrl;
  snprintf(t->uuid, sizeof t->uuid, "%s", p->uuid);
  t->proxy = !p->kernel_ch && p->proxy;
  t->nonproxy = !p->kernel_ch && !p->proxy;
  return (uint32_t)x->ntracks++;
}

/* Calls fn(x, record, arg) for each parsed record of r's file, through the
 * collate reader (rankfile_read.h), which reports damaged lines. */
typedef int (*cp_line_fn)(cp_rankx *x, json_t *j, void *arg);
typedef struct { cp_rankx *x; cp_line_fn fn; void *arg; } cp_stream_ctx;
static int cp_stream_cb(void *ctx, const char *type, json_t *rec, long line) {
  cp_stream_ctx *c = ctx;
  (void)type, (void)line;
  return c->fn(c->x, rec, c->arg);
}
static int cp_each_line(cp_rankx *x, cp_line_fn fn, void *arg) {
  cp_stream_ctx c = {x, fn, arg};
  int rc = cp_rankfile_stream(x->r->file, cp_stream_cb, &c);
  if (rc == -1) fprintf(stderr, "collprof: cannot read %s: %s\n", x->r->file, strerror(errno));
  return rc;
}

/* ---- pass 1: intervals, tracks, lanes ---- */

static int cp_pass1(cp_rankx *x, json_t *j, void *arg) {
  (void)arg;
  if (strcmp(cp_j_str(j, "recordType"), "event") != 0) return 0;
  if (!strcmp(cp_j_str(j, "type"), "ProfilerLifecycle")) return 0;
  cp_evpos p;
  if (cp_event_pos(x, j, &p)) return 0;
  uint32_t t = cp_track_of(x, &p);
  if (t == UINT32_MAX) return -1;
  if (x->nspans == x->capspans) {
    size_t n = x->capspans ? x->capspans * 2 : 1024;
    cp_span *s = realloc(x->spans, n * sizeof *s);
    if (!s) return -1;
    x->spans = s, x->capspans = n;
  }
  x->spans[x->nspans] = (cp_span){p.start, p.end, t, (uint32_t)x->nspans};
  x->nspans++;
  return 0;
}

static int cp_span_cmp(const void *a, const void *b) {
  const cp_span *p = a, *q = b;
  if (p->track != q->track) return p->track < q->track ? -1 : 1;
  if (p->start != q->start) return p->start < q->start ? -1 : 1;
  if (p->end != q->end) return p->end > q->end ? -1 : 1;   /* enclosing first */
  return p->idx < q->idx ? -1 : p->idx > q->idx;
}

typedef struct { int64_t *end; size_t n, cap; } cp_stack;

/* Greedy: a slice goes to the first lane where it nests (after closing
 * what ended before it starts). */
static int cp_assign_lanes(cp_rankx *x) {
  x->lane = calloc(x->nspans ? x->nspans : 1, sizeof *x->lane);
  x->trk = calloc(x->nspans ? x->nspans : 1, sizeof *x->trk);
  if (!x->lane || !x->trk) return -1;
  if (x->nspans) qsort(x->spans, x->nspans, sizeof *x->spans, cp_span_cmp);
  cp_stack st[CP_MAX_LANES];
  memset(st, 0, sizeof st);
  int rc = 0;
  for (size_t i = 0; i < x->nspans && rc == 0;) {
    size_t j = i;
    uint32_t nl = 1;
    for (uint32_t l = 0; l < CP_MAX_LANES; l++) st[l].n = 0;
    for (; j < x->nspans && x->spans[j].track == x->spans[i].track; j++) {
      const cp_span *s = &x->spans[j];
      uint32_t l = 0;
      for (; l < CP_MAX_LANES; l++) {
        cp_stack *k = &st[l];
        while (k->n && k->end[k->n - 1] <= s->start) k->n--;
        if (k->n == 0 || k->end[k->n - 1] >= s->end) break;
      }
      if (l == CP_MAX_LANES) l = CP_MAX_LANES - 1; /* give up nesting */
      cp_stack *k = &st[l];
      if (k->n == k->cap) {
        size_t n = k->cap ? k->cap * 2 : 64;
        int64_t *e = realloc(k->end, n * sizeof *e);
        if (!e) { rc = -1; break; }
        k->end = e, k->cap = n;
      }
      k->end[k->n++] = s->end;
      x->lane[s->idx] = l;
      x->trk[s->idx] = s->track;
      if (l + 1 > nl) nl = l + 1;
    }
    cp_track *t = &x->tracks[x->spans[i].track];
    t->nlanes = nl;
    i = j;
  }
  for (uint32_t l = 0; l < CP_MAX_LANES; l++) free(st[l].end);
  if (rc) return rc;
  /* Chrome tids: a host thread's first lane is its own tid. */
  for (size_t i = 0; i < x->ntracks; i++) {
    cp_track *t = &x->tracks[i];
    if (!t->nlanes) t->nlanes = 1;
    t->lane_tid = malloc(t->nlanes * sizeof *t->lane_tid);
    if (!t->lane_tid) return -1;
    for (uint32_t l = 0; l < t->nlanes; l++)
      t->lane_tid[l] = (!t->gpu && !t->ctrl && l == 0) ? t->tid : x->next_syn++;
  }
  return 0;
}

/* ---- output ---- */

typedef struct { FILE *f; int first; int64_t pid; uint32_t sort, k; } cp_out;

static void cp_sep(cp_out *o) {
  fputs(o->first ? "\n" : ",\n", o->f);
  o->first = 0;
}

static void cp_jstr(FILE *f, const char *s) { cp_json_str(f, s); }

static void cp_dump(FILE *f, json_t *v) {
  char *d = v ? json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
  fputs(d ? d : "null", f);
  free(d);
}

static void cp_meta(cp_out *o, const char *what, int64_t tid, const char *key, const char *sval,
                    int64_t ival) {
  cp_sep(o);
  fprintf(o->f, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%" PRId64, what, o->pid);
  if (tid >= 0) fprintf(o->f, ",\"tid\":%" PRId64, tid);
  fprintf(o->f, ",\"args\":{\"%s\":", key);
  if (sval) cp_jstr(o->f, sval);
  else fprintf(o->f, "%" PRId64, ival);
  fputs("}}", o->f);
}

static void cp_write_meta(cp_rankx *x, cp_out *o) {
  const cp_rank_data *r = x->r;
  char name[512], gpus[200] = "";
  size_t n = 0;
  for (size_t i = 0; i < r->ncomms; i++) {
    const char *u = r->comms[i].gpu_uuid;
    if (!u[0] || strstr(gpus, u)) continue;
    int w = snprintf(gpus + n, sizeof gpus - n, "%s%s", n ? " " : "", u);
    if (w < 0 || (size_t)w >= sizeof gpus - n) break;
    n += (size_t)w;
  }
  if (r->rank >= 0)
    snprintf(name, sizeof name, "rank %d (%s%s%s)", r->rank, r->host, gpus[0] ? ", GPU " : "", gpus);
  else
    snprintf(name, sizeof name, "pid %d (%s%s%s)", r->pid, r->host, gpus[0] ? ", GPU " : "", gpus);
  cp_meta(o, "process_name", -1, "name", name, 0);
  cp_meta(o, "process_sort_index", -1, "sort_index", NULL, r->rank >= 0 ? r->rank : (int64_t)o->sort);
  int64_t sort = 0;
  for (size_t i = 0; i < x->ntracks; i++) {
    cp_track *t = &x->tracks[i];
    for (uint32_t l = 0; l < t->nlanes; l++) {
      char tn[200], lane[32] = "";
      if (l) snprintf(lane, sizeof lane, " (overlap %u)", l + 1);
      if (t->gpu) {
        char ch[16] = "?";
        if (t->channel >= 0) snprintf(ch, sizeof ch, "%d", t->channel);
        snprintf(tn, sizeof tn, "GPU%s%.8s ch %s%s", t->uuid[0] ? " " : "", t->uuid, ch, lane);
      } else {
        const char *kind = t->tid == r->pid ? "main" : t->proxy && !t->nonproxy ? "proxy" : "thread";
        snprintf(tn, sizeof tn, "%s %" PRId64 "%s%s", kind, t->tid, t->ctrl ? " ProxyCtrl" : "", lane);
      }
      cp_meta(o, "thread_name", t->lane_tid[l], "name", tn, 0);
      cp_meta(o, "thread_sort_index", t->lane_tid[l], "sort_index", NULL,
              (t->gpu ? 100000 : 0) + sort++);
    }
  }
}

static int cp_pass2(cp_rankx *x, json_t *j, void *arg) {
  cp_out *o = arg;
  const char *rt = cp_j_str(j, "recordType");
  char ts[40], dur[40];
  if (!strcmp(rt, "state")) {
    int64_t t = cp_j_ns(json_object_get(j, "ts"));
    if (t == INT64_MIN) return 0;
    cp_sep(o);
    fputs("{\"name\":", o->f);
    cp_jstr(o->f, cp_j_str(j, "name"));
    fprintf(o->f, ",\"cat\":\"state\",\"ph\":\"i\",\"s\":\"t\",\"ts\":%s,\"pid\":%" PRId64
                  ",\"tid\":%" PRId64 ",\"args\":{",
            cp_export_us(cp_add_sat(t, x->off), ts, sizeof ts), o->pid, cp_j_int(j, "tid", 0));
    static const char *keys[] = {"eventAddr", "id", "transSize", "appendedProxyOps", "gpuStop"};
    int first = 1;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
      json_t *v = json_object_get(j, keys[i]);
      if (!v) continue;
      fprintf(o->f, "%s\"%s\":", first ? "" : ",", keys[i]);
      cp_dump(o->f, v);
      first = 0;
    }
    fputs("}}", o->f);
    return 0;
  }
  if (strcmp(rt, "event") != 0) return 0;
  const char *type = cp_j_str(j, "type"), *func = cp_j_str(j, "func");
  if (!strcmp(type, "ProfilerLifecycle")) {
    int64_t t = cp_j_ns(json_object_get(json_object_get(j, "start"), "ts"));
    if (t == INT64_MIN) return 0;
    cp_sep(o);
    fputs("{\"name\":", o->f);
    cp_jstr(o->f, func);
    fprintf(o->f, ",\"cat\":\"lifecycle\",\"ph\":\"i\",\"s\":\"p\",\"ts\":%s,\"pid\":%" PRId64
                  ",\"tid\":%" PRId64 ",\"args\":{\"commId\":",
            cp_export_us(cp_add_sat(t, x->off), ts, sizeof ts), o->pid,
            cp_j_int(json_object_get(j, "start"), "tid", 0));
    cp_jstr(o->f, cp_j_str(j, "commId"));
    fputs(",\"details\":", o->f);
    cp_dump(o->f, json_object_get(j, "details"));
    fputs("}}", o->f);
    return 0;
  }
  cp_evpos p;
  if (cp_event_pos(x, j, &p)) return 0;
  uint32_t k = o->k++;
  if (k >= x->nspans) return 0; /* the file grew since pass 1 */
  const cp_track *t = &x->tracks[x->trk[k]];
  uint32_t l = x->lane[k] < t->nlanes ? x->lane[k] : 0;
  const char *sh = cp_short(type);
  int64_t path = cp_j_int(j, "path", -1);
  cp_sep(o);
  fputs("{\"name\":", o->f);
  if (*func) {
    char nm[160];
    snprintf(nm, sizeof nm, "%s:%s", sh, func);
    cp_jstr(o->f, nm);
  } else {
    cp_jstr(o->f, sh);
  }
  fputs(",\"cat\":", o->f);
  cp_jstr(o->f, sh);
  fprintf(o->f, ",\"ph\":\"X\",\"ts\":%s,\"dur\":%s,\"pid\":%" PRId64 ",\"tid\":%" PRId64
                ",\"args\":{",
          cp_export_us(p.start, ts, sizeof ts), cp_export_us(p.end - p.start, dur, sizeof dur),
          o->pid, t->lane_tid[l]);
  if (path >= 0 && (size_t)path < x->ngid && x->gid[path] != INT64_MIN) {
    const cp_path_rec *pr = x->prec[path];
    if (pr) {
      fputs("\"path\":", o->f);
      cp_jstr(o->f, pr->path);
      if (x->gid[path] >= 0) fprintf(o->f, ",\"pathId\":%" PRId64 ",", x->gid[path]);
      else fputs(",\"pathId\":null,", o->f);
    }
  }
  fputs("\"localPath\":", o->f);
  cp_dump(o->f, json_object_get(j, "path"));
  fputs(",\"commId\":", o->f);
  cp_jstr(o->f, cp_j_str(j, "commId"));
  fprintf(o->f, ",\"ncclRank\":%" PRId64, cp_j_int(j, "rank", -1));
  if (json_is_true(json_object_get(j, "isPxn")))
    fprintf(o->f, ",\"isPxn\":true,\"originPid\":%" PRId64, cp_j_int(j, "originPid", 0));
  if (p.kernel_ch) fprintf(o->f, ",\"gpuTime\":%s", p.on_gpu ? "true" : "false");
  fputs(",\"eventAddr\":", o->f);
  cp_dump(o->f, json_object_get(j, "eventAddr"));
  fputs(",\"details\":", o->f);
  cp_dump(o->f, json_object_get(j, "details"));
  fputs("}}", o->f);
  return 0;
}

static void cp_rankx_free(cp_rankx *x) {
  for (size_t i = 0; i < x->ntracks; i++) free(x->tracks[i].lane_tid);
  free(x->tracks); free(x->spans); free(x->lane); free(x->trk); free(x->gid); free(x->prec);
}

int cp_export_chrome(const cp_run *run, const cp_summary *s, const char *out) {
  FILE *f = cp_export_open(out);
  if (!f) return -1;
  fprintf(f, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool\":\"collprof\",\"clock\":"
             "\"CLOCK_MONOTONIC of rank 0, microseconds\",\"ranks\":%zu},\"traceEvents\":[",
          run->nranks);
  cp_out o = {.f = f, .first = 1};
  int rc = 0;
  int64_t next_syn = CP_SYN_TID0;
  for (size_t k = 0; k < run->nranks; k++) {
    const cp_rank_data *r = &run->ranks[k];
    if (!r->file) continue;
    cp_rankx x;
    memset(&x, 0, sizeof x);
    x.r = r, x.s = s, x.off = r->has_clock ? r->clock_offset_ns : 0, x.next_syn = next_syn;
    /* local path id -> global id, for the paths of the run and those
     * first seen after MPI_Finalize began (the summary's id when another
     * rank had the path, else -1) */
    for (size_t i = 0; i < r->npaths; i++)
      if (r->paths[i].local + (size_t)1 > x.ngid) x.ngid = r->paths[i].local + (size_t)1;
    for (size_t i = 0; i < r->nlate; i++)
      if (r->late[i].local + (size_t)1 > x.ngid) x.ngid = r->late[i].local + (size_t)1;
    x.gid = malloc((x.ngid ? x.ngid : 1) * sizeof *x.gid);
    x.prec = calloc(x.ngid ? x.ngid : 1, sizeof *x.prec);
    if (!x.gid || !x.prec) { cp_rankx_free(&x); rc = -1; break; }
    for (size_t i = 0; i < x.ngid; i++) x.gid[i] = INT64_MIN;
    for (size_t i = 0; i < r->nlate; i++) {
      x.gid[r->late[i].local] = cp_export_global_id(s, &r->late[i]);
      x.prec[r->late[i].local] = &r->late[i];
    }
    for (size_t i = 0; i < r->npaths; i++) {
      x.gid[r->paths[i].local] = cp_export_global_id(s, &r->paths[i]);
      x.prec[r->paths[i].local] = &r->paths[i];
    }
    if (cp_each_line(&x, cp_pass1, NULL) || cp_assign_lanes(&x)) {
      fprintf(stderr, "collprof: %s: left out of %s\n", r->file, out);
      cp_rankx_free(&x);
      continue;
    }
    next_syn = x.next_syn;
    /* Chrome pid = rank + 1: Perfetto treats pid 0 as the kernel's idle
     * task.  The process name says the rank. */
    o.pid = r->rank >= 0 ? (int64_t)r->rank + 1 : r->pid;
    o.sort = (uint32_t)k;
    cp_write_meta(&x, &o);
    o.k = 0;
    cp_each_line(&x, cp_pass2, &o);
    cp_rankx_free(&x);
  }
  fputs("\n]}\n", f);
  if (cp_export_close(f, out)) rc = -1;
  return rc;
}
