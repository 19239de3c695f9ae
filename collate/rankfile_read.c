/*
 * rankfile_read.c — JSONL rank files -> cp_rank_data / record stream
 * (rankfile_read.h).
 */
#include "rankfile_read.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <time.h>

#define MAX_MSGS 10

int64_t cp_json_i64(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  if (json_is_integer(v)) return (int64_t)json_integer_value(v);
  if (json_is_real(v)) return (int64_t)llround(json_real_value(v));
  if (json_is_string(v)) return (int64_t)strtoll(json_string_value(v), NULL, 0);
  return 0;
}

uint64_t cp_json_u64str(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  if (json_is_string(v)) return strtoull(json_string_value(v), NULL, 0);
  if (json_is_integer(v)) return (uint64_t)json_integer_value(v);
  return 0;
}

/* An integer token past INT64_MAX: 19 digits above "9223372036854775807", or
 * 20 or more (a minus sign makes it a number jansson refuses too, kept). */
static int past_i64(const char *d, size_t n) {
  return n > 19 || (n == 19 && memcmp(d, "9223372036854775807", 19) > 0);
}

/* One line as JSON.  An unsigned 64-bit value past INT64_MAX (a path's
 * bytes or GPU time summed from what NCCL handed over, a Coll's seq, a
 * transSize), which the plugin writes as it is, is more than jansson holds
 * as an integer: such a line is parsed again with those numbers quoted,
 * so that they arrive as decimal strings, exact (u64() and
 * cp_json_u64str read them), rather than costing the line. */
static json_t *load_line(const char *s, size_t len, json_error_t *err) {
  json_t *o = json_loadb(s, len, 0, err);
  if (o || !strstr(err->text, "too big integer")) return o;
  char *q = malloc(len * 2 + 1);   /* at worst every other byte gains a quote */
  if (!q) return NULL;
  size_t n = 0;
  int in_str = 0;
  for (size_t i = 0; i < len;) {
    const char c = s[i];
    if (in_str) {
      q[n++] = c;
      if (c == '\\' && i + 1 < len) q[n++] = s[++i];
      else if (c == '"') in_str = 0;
      i++;
    } else if (c == '"') {
      in_str = 1;
      q[n++] = s[i++];
    } else if (c >= '0' && c <= '9') {
      size_t j = i;
      while (j < len && s[j] >= '0' && s[j] <= '9') j++;
      const int integer = j >= len || (s[j] != '.' && s[j] != 'e' && s[j] != 'E');
      const int big = integer && (i == 0 || s[i - 1] != '-') && past_i64(s + i, j - i);
      if (big) q[n++] = '"';
      memcpy(q + n, s + i, j - i);
      n += j - i;
      if (big) q[n++] = '"';
      i = j;
    } else {
      q[n++] = s[i++];
    }
  }
  o = json_loadb(q, n, 0, err);
  free(q);
  return o;
}

/* A count or sum: an integer, a decimal string (load_line's quoted form),
 * or a real; 0 where negative or absent. */
static uint64_t u64(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  if (json_is_string(v)) return strtoull(json_string_value(v), NULL, 10);
  if (json_is_real(v)) {
    const double d = json_real_value(v);
    return d > 0 && d < 18446744073709551616.0 ? (uint64_t)d : 0;
  }
  const int64_t i = cp_json_i64(o, k);
  return i < 0 ? 0 : (uint64_t)i;
}

static const char *str(json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

/* microseconds with 3 decimals -> ns */
static uint64_t ts_ns(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  double d = json_is_number(v) ? json_number_value(v) : 0;
  return d > 0 ? (uint64_t)llround(d * 1000.0) : 0;
}

/* "2025-01-31T12:00:00.123456789Z" -> ns since the epoch */
static int64_t iso_ns(const char *s) {
  struct tm tm = {0};
  int y, mo, d, h, mi, sec;
  if (sscanf(s, "%d-%d-%dT%d:%d:%d", &y, &mo, &d, &h, &mi, &sec) != 6) return 0;
  tm.tm_year = y - 1900; tm.tm_mon = mo - 1; tm.tm_mday = d;
  tm.tm_hour = h; tm.tm_min = mi; tm.tm_sec = sec;
  int64_t ns = (int64_t)timegm(&tm) * 1000000000;
  const char *dot = strchr(s, '.');
  if (dot) {
    int64_t frac = 0, scale = 100000000;
    for (const char *p = dot + 1; *p >= '0' && *p <= '9'; p++, scale /= 10)
      if (scale) frac += (*p - '0') * scale;
    ns += frac;
  }
  return ns;
}

/* An array element that is a count or sum: a non-negative integer, or
 * one past INT64_MAX that load_line quoted; 0 when it is neither. */
static int elem_u64(json_t *x, uint64_t *v) {
  if (json_is_integer(x) && json_integer_value(x) >= 0) {
    *v = (uint64_t)json_integer_value(x);
    return 1;
  }
  const char *d = json_string_value(x);
  if (!d || !*d || strspn(d, "0123456789") != strlen(d)) return 0;
  errno = 0;
  *v = strtoull(d, NULL, 10);
  return errno == 0;
}

/* "gpuSizes": [[lo, calls, samples, first samples, ns, first ns, max ns,
 * est ns, est calls, outliers, outlier ns, lent], ...] (the last five
 * absent in files from before); an entry of another length is left out
 * (a damaged file; one whose parts exceed their whole, by merge.c). */
static void read_sizes(json_t *o, cp_path_rec *p) {
  json_t *a = json_object_get(o, "gpuSizes");
  if (!json_is_array(a) || !json_array_size(a)) return;
  p->sizes = calloc(json_array_size(a), sizeof *p->sizes);
  if (!p->sizes) return;
  size_t i;
  json_t *e;
  json_array_foreach(a, i, e) {
    uint64_t v[12];
    const size_t n = json_is_array(e) ? json_array_size(e) : 0;
    int ok = n == 7 || n == 12;
    for (size_t k = 0; ok && k < n; k++) ok = elem_u64(json_array_get(e, k), &v[k]);
    if (!ok) continue;   /* (parts larger than their whole: left out in merge.c) */
    cp_size_rec r = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], 0, 0, 0, 0, 0, 0};
    if (n == 12) {
      r.est_ns = v[7]; r.est_calls = v[8]; r.outliers = v[9]; r.outlier_ns = v[10]; r.lent = v[11];
      r.has_est = 1;
    }
    p->sizes[p->nsizes++] = r;
  }
}

static void read_path(json_t *o, cp_path_rec *p) {
  memset(p, 0, sizeof *p);
  json_t *id = json_object_get(o, "id");
  p->id = json_is_integer(id) ? (int64_t)json_integer_value(id) : -1;
  p->local = (uint32_t)cp_json_i64(o, "local");
  p->hash = cp_json_u64str(o, "hash");
  p->path = strdup(str(o, "path"));
  p->leaf_type = cp_type_from_name(str(o, "leafType"));
  p->leaf_func = strdup(str(o, "leafFunc"));
  p->calls = u64(o, "calls"); p->total_ns = u64(o, "total_ns"); p->self_ns = u64(o, "self_ns");
  p->min_ns = u64(o, "min_ns"); p->max_ns = u64(o, "max_ns"); p->bytes = u64(o, "bytes");
  p->states = u64(o, "states"); p->gpu_ns = u64(o, "gpu_ns");
  p->gpu_samples = u64(o, "gpu_samples"); p->unterminated = u64(o, "unterminated");
  p->gpu_first_ns = u64(o, "gpu_first_ns");   /* files from before: absent, 0 */
  p->gpu_first_samples = u64(o, "gpu_first_samples");
  p->has_est = json_object_get(o, "gpu_est_calls") != NULL;   /* written with samples only */
  p->gpu_est_ns = u64(o, "gpu_est_ns"); p->gpu_est_calls = u64(o, "gpu_est_calls");
  p->gpu_outliers = u64(o, "gpu_outliers");
  p->gpu_borrowed_calls = u64(o, "gpu_borrowed_calls");   /* absent when none (and in files from before) */
  p->gpu_launch_ns = u64(o, "gpu_launch_ns");   /* absent without timed launches */
  p->gpu_launch_samples = u64(o, "gpu_launch_samples");
  p->has_launch_calls = json_object_get(o, "gpu_launch_calls") != NULL;   /* Coll/P2p paths */
  p->gpu_launch_calls = u64(o, "gpu_launch_calls");
  p->untimed_calls = u64(o, "untimed_calls");   /* absent when every call was timed */
  p->unseen_calls = u64(o, "unseen_calls");     /* absent without lean calls (both bounded in merge.c) */
  if (p->leaf_type == 2 || p->leaf_type == 4) read_sizes(o, p);   /* Coll, P2p (proxy paths': another meaning) */
}

static void read_rank(json_t *o, cp_rank_data *r) {
  r->has_rank_rec = 1;
  r->rank = (int)cp_json_i64(o, "rank");
  r->world_size = (int)cp_json_i64(o, "worldSize");
  r->pid = (int)cp_json_i64(o, "pid");
  snprintf(r->host, sizeof r->host, "%s", str(o, "host"));
  r->start_wall_ns = iso_ns(str(o, "startWall"));
  r->start_ns = ts_ns(o, "startTs"); r->end_ns = ts_ns(o, "endTs");
  r->event_mask = (uint32_t)cp_json_i64(o, "eventMask");
  r->gpu_sample = (int)cp_json_i64(o, "gpuSample");
  /* files from before small calls were sampled apart: one in N for all */
  r->gpu_sample_small = json_object_get(o, "gpuSampleSmall") ? (int)cp_json_i64(o, "gpuSampleSmall") : 1;
  r->gpu_sample_small_bytes = u64(o, "gpuSampleSmallBytes");
  /* files from before the start delay (start_delay.c): unknown */
  r->gpu_sample_delay_ms = json_object_get(o, "gpuSampleDelayMs") ? (int)cp_json_i64(o, "gpuSampleDelayMs") : -1;
  r->gpu_sample_delay_auto = json_is_true(json_object_get(o, "gpuSampleDelayAuto"));
  r->trace_on = json_is_true(json_object_get(o, "traceOn")) || cp_json_i64(o, "traceOn") == 1;
  r->nccl_version = (int)cp_json_i64(o, "ncclVersion");
  snprintf(r->periods, sizeof r->periods, "%s", str(o, "periods"));
  snprintf(r->windows, sizeof r->windows, "%s", str(o, "windows"));
  r->events_recorded = u64(o, "eventsRecorded"); r->events_pxn = u64(o, "eventsPxn");
  r->events_counted = u64(o, "eventsCounted");
  r->cost_callbacks = u64(o, "costCallbacks"); r->cost_windows = u64(o, "costWindows");
  r->cost_window_ns = u64(o, "costWindowNs"); r->cost_span_ns = u64(o, "costSpanNs");
  r->cost_est_ns = u64(o, "costNs");
  r->cost_setup_ns = u64(o, "costSetupNs");
  r->cost_err_ns = json_is_integer(json_object_get(o, "costErrNs")) ? cp_json_i64(o, "costErrNs") : -1;
  r->unterminated = u64(o, "unterminated"); r->blacklist_evictions = u64(o, "blacklistEvictions");
  r->unknown_parent = u64(o, "unknownParent"); r->trace_dropped = u64(o, "traceDropped");
  r->bad_calls = u64(o, "badCalls"); r->gpu_sampled_calls = u64(o, "gpuSampledCalls");
  r->gpu_samples_dropped = u64(o, "gpuSamplesDropped");
  r->gpu_samples_deferred = u64(o, "gpuSamplesDeferred");
  r->gpu_launches_timed = u64(o, "gpuLaunchesTimed");
  r->gpu_launches_unattributed = u64(o, "gpuLaunchesUnattributed");
  r->gpu_launches_skipped = u64(o, "gpuLaunchesSkipped");
  r->gpu_launches_unread = u64(o, "gpuLaunchesUnread");
  r->gpu_launches_idle = u64(o, "gpuLaunchesIdle");
  snprintf(r->mask_frozen, sizeof r->mask_frozen, "%s", str(o, "maskFrozen"));
  r->memory_bytes = u64(o, "memoryBytes");
  json_t *c = json_object_get(o, "perEventCostNs");
  r->per_event_cost_ns = json_is_number(c) ? json_number_value(c) : 0;
  free(r->command);
  r->command = strdup(str(o, "command"));
  json_t *comms = json_object_get(o, "comms");
  free(r->comms);
  r->ncomms = 0;
  r->comms = calloc(json_array_size(comms) + 1, sizeof *r->comms);
  if (!r->comms) return;
  size_t i; json_t *e;
  json_array_foreach(comms, i, e) {
    cp_comm_rec *d = &r->comms[r->ncomms++];
    d->comm_id = cp_json_u64str(e, "commId");
    snprintf(d->comm_name, sizeof d->comm_name, "%s", str(e, "commName"));
    d->nranks = (int)cp_json_i64(e, "nranks"); d->nnodes = (int)cp_json_i64(e, "nNodes");
    d->nccl_rank = (int)cp_json_i64(e, "rank");
    snprintf(d->gpu_uuid, sizeof d->gpu_uuid, "%s", str(e, "gpuUuid"));
    d->events = u64(e, "events");
    json_t *g = json_object_get(e, "gpuOffsetNs");
    d->gpu_offset_valid = json_is_integer(g);
    d->gpu_offset_ns = d->gpu_offset_valid ? (int64_t)json_integer_value(g) : 0;
  }
}

static void free_paths(cp_path_rec *p, size_t n) {
  for (size_t i = 0; i < n; i++) { free(p[i].path); free(p[i].leaf_func); free(p[i].sizes); }
}

/* p into (*a)[*n] (capacity *cap), replacing a record of the same local
 * id (a later tail block's); frees p when out of memory. */
static void add_path(cp_path_rec **a, size_t *n, size_t *cap, cp_path_rec p) {
  size_t i = 0;
  while (i < *n && (*a)[i].local != p.local) i++;
  if (i < *n) { free_paths(&(*a)[i], 1); (*a)[i] = p; return; }
  if (*n == *cap) {
    size_t nc = *cap ? 2 * *cap : 64;
    cp_path_rec *q = realloc(*a, nc * sizeof *q);
    if (!q) { free_paths(&p, 1); return; }
    *a = q; *cap = nc;
  }
  (*a)[(*n)++] = p;
}

/* Lines of a file, with the message rule for bad ones. */
typedef struct { const char *file; FILE *f; char *buf; size_t cap; long line; size_t bad; } lines;

static void bad_line(lines *L, const char *what) {
  if (++L->bad <= MAX_MSGS)
    fprintf(stderr, "collprof: %s:%ld: %s; line skipped\n", L->file, L->line, what);
}

/* Next line without its newline, NULL at the end. */
static char *next_line(lines *L, size_t *len) {
  ssize_t n = getline(&L->buf, &L->cap, L->f);
  if (n < 0) return NULL;
  L->line++;
  while (n > 0 && (L->buf[n - 1] == '\n' || L->buf[n - 1] == '\r')) L->buf[--n] = 0;
  *len = (size_t)n;
  return L->buf;
}

static void finish_lines(lines *L) {
  if (L->bad > MAX_MSGS)
    fprintf(stderr, "collprof: %s: %zu malformed lines in all\n", L->file, L->bad);
  free(L->buf);
  fclose(L->f);
}

/* Event and state records are most of a file: skip them unparsed. */
static int is_bulk(const char *s) {
  return !strncmp(s, "{\"recordType\":\"event\"", 21) || !strncmp(s, "{\"recordType\":\"state\"", 21);
}

int cp_rankfile_read(const char *file, cp_rank_data *out, size_t *bad_lines) {
  memset(out, 0, sizeof *out);
  out->rank = -1;
  if (bad_lines) *bad_lines = 0;
  lines L = {file, fopen(file, "r"), NULL, 0, 0, 0};
  if (!L.f) return -1;
  out->file = strdup(file);
  size_t cap = 0, late_cap = 0, len;
  int block_closed = 0;     /* a rank record was seen: next path starts a block */
  char *s;
  while ((s = next_line(&L, &len))) {
    if (!len) continue;
    if (s[len - 1] != '}') { bad_line(&L, "truncated line"); continue; }
    if (is_bulk(s)) continue;
    json_error_t err;
    json_t *o = load_line(s, len, &err);
    if (!o || !json_is_object(o)) { bad_line(&L, o ? "not an object" : err.text); json_decref(o); continue; }
    const char *type = str(o, "recordType");
    if (!strcmp(type, "path")) {
      if (block_closed) {
        free_paths(out->paths, out->npaths); out->npaths = 0;
        free_paths(out->late, out->nlate); out->nlate = 0;
        block_closed = 0;
      }
      cp_path_rec p;
      read_path(o, &p);
      if (json_is_true(json_object_get(o, "afterFinalize"))) add_path(&out->late, &out->nlate, &late_cap, p);
      else add_path(&out->paths, &out->npaths, &cap, p);
    } else if (!strcmp(type, "rank")) {
      read_rank(o, out);
      block_closed = 1;
    } else if (!strcmp(type, "clock")) {
      out->has_clock = 1;
      out->clock_offset_ns = cp_json_i64(o, "offsetNs");
      out->clock_rtt_ns = cp_json_i64(o, "rttNs");
    }
    json_decref(o);
  }
  if (bad_lines) *bad_lines = L.bad;
  finish_lines(&L);
  if (!out->command) out->command = strdup("");
  return 0;
}

int cp_rankfile_stream(const char *file, cp_record_cb cb, void *ctx) {
  lines L = {file, fopen(file, "r"), NULL, 0, 0, 0};
  if (!L.f) return -1;
  size_t len;
  char *s;
  int rc = 0;
  while (!rc && (s = next_line(&L, &len))) {
    if (!len) continue;
    if (s[len - 1] != '}') { bad_line(&L, "truncated line"); continue; }
    json_error_t err;
    json_t *o = load_line(s, len, &err);
    if (!o || !json_is_object(o)) { bad_line(&L, o ? "not an object" : err.text); json_decref(o); continue; }
    rc = cb(ctx, str(o, "recordType"), o, L.line);
    json_decref(o);
  }
  finish_lines(&L);
  return rc;
}

/* ---- a folder ---- */

typedef struct { char *name; long num; } fent;
static int fent_cmp(const void *x, const void *y) {
  const fent *a = x, *b = y;
  return a->num < b->num ? -1 : a->num > b->num;
}

/* "rank12.jsonl" with prefix "rank" -> 12; -1 if the name does not match */
static long name_num(const char *n, const char *prefix) {
  size_t pl = strlen(prefix);
  if (strncmp(n, prefix, pl)) return -1;
  char *end;
  const char *d = n + pl;
  if (*d < '0' || *d > '9') return -1;
  long v = strtol(d, &end, 10);
  return strcmp(end, ".jsonl") ? -1 : v;
}

static int rank_cmp(const void *x, const void *y) {
  const cp_rank_data *a = x, *b = y;
  return a->rank < b->rank ? -1 : a->rank > b->rank;
}

int cp_run_read(const char *dir, cp_run *run) {
  memset(run, 0, sizeof *run);
  DIR *d = opendir(dir);
  if (!d) { fprintf(stderr, "collprof: cannot list %s\n", dir); return -1; }
  run->dir = strdup(dir);
  fent *fr = NULL, *fp = NULL;
  size_t nr = 0, np = 0, cr = 0, cpn = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    long v;
    if ((v = name_num(e->d_name, "rank")) >= 0) {
      if (nr == cr) { cr = cr ? 2 * cr : 16; fr = realloc(fr, cr * sizeof *fr); }
      fr[nr].name = strdup(e->d_name); fr[nr++].num = v;
    } else if ((v = name_num(e->d_name, "pid")) >= 0) {
      if (np == cpn) { cpn = cpn ? 2 * cpn : 16; fp = realloc(fp, cpn * sizeof *fp); }
      fp[np].name = strdup(e->d_name); fp[np++].num = v;
    }
  }
  closedir(d);
  fent *use = nr ? fr : fp;
  size_t n = nr ? nr : np;
  if (use) qsort(use, n, sizeof *use, fent_cmp);
  run->ranks = calloc(n + 1, sizeof *run->ranks);
  int maxrank = -1;
  size_t got = 0;
  for (size_t i = 0; run->ranks && i < n; i++) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, use[i].name);
    cp_rank_data *r = &run->ranks[got];
    size_t bad;
    if (cp_rankfile_read(path, r, &bad) != 0) {
      fprintf(stderr, "collprof: cannot read %s\n", path);
      continue;
    }
    if (r->rank < 0 && nr) r->rank = (int)use[i].num;   /* rank file without a rank record */
    if (!r->has_rank_rec) fprintf(stderr, "collprof: %s has no rank record (run cut short?)\n", path);
    if (r->rank > maxrank) maxrank = r->rank;
    got++;
  }
  for (size_t i = 0; i < got; i++)
    if (run->ranks[i].rank < 0) run->ranks[i].rank = ++maxrank;
  run->nranks = got;
  if (run->ranks) qsort(run->ranks, got, sizeof *run->ranks, rank_cmp);
  for (size_t i = 0; i < nr; i++) free(fr[i].name);
  for (size_t i = 0; i < np; i++) free(fp[i].name);
  free(fr); free(fp);
  return (int)got;
}
