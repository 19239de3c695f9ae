/*
 * config.c — reads the environment once into a cp_config (config.h), and
 * the "collprof:" message lines.
 *
 * Every variable has a default; a malformed value gives exactly one warning
 *   collprof: COLLPROF_X='bad': <why>; using <default>
 * and the default.  Numbers are decimal or 0x hex (masks and sizes alike).
 * First caller loads under a mutex, later callers read the published copy
 * without a lock (acquire load of `g_loaded`).
 *
 * Choices worth knowing:
 *  - COLLPROF_GPU_SAMPLE default: 16 when NCCL_PROFILE_EVENT_MASK is unset,
 *    1 when the user's mask has KernelCh (they asked for every KernelCh), 0
 *    when it lacks it.  mask_control.c switches KernelCh only where NCCL
 *    2.28 survives it (no group open, no graph captured, one calling
 *    thread).
 *  - COLLPROF_PERIODS is only syntax-checked here with the rule
 *    profiling_windows.c applies (delay>=0 : duration>0 [: repeat integer>=0],
 *    seconds, fractions allowed); the string is stored as given.
 *  - The collprof-<YYYYMMDD-HHMMSS> folder name (local time) is chosen on
 *    the first load and kept by cp_config_reload, so one process never
 *    changes folder by re-reading the environment.
 */
#include "config.h"
#include "host_sample.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)

#define MASK_KERNELCH 64u
#define MASK_ALL 4095u
#define DEF_MASK (MASK_ALL & ~MASK_KERNELCH)
#define DEF_POOL 1024u
#define DEF_BLACKLIST 10000000ull
/* 16384 full records = 2 MiB of ring per thread: small enough to stay in a
 * core's L2 cache.  With 8 MiB, every new ring line was a cache miss the
 * proxy thread waited for at its next pool lock, and with every event on,
 * 4-rank 2 MB all-reduces ran 23% slower than with the do-nothing plugin;
 * with 2 MiB, 1% (H200, median of 8 alternated runs; no record dropped). */
#define DEF_TRACE_BUF 16384u
#define DEF_TRACE_NICE 10   /* trace_writer.c: why the writer yields */

static cp_config g_cfg;
static atomic_int g_loaded;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_stamp_dir[64];   /* collprof-<time>, chosen once */

/* ---- messages ---- */

static void vline(const char *fmt, va_list ap) {
  char buf[1024];
  int n = snprintf(buf, sizeof buf, "collprof: ");
  int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
  if (m < 0) m = 0;
  size_t len = (size_t)n + ((size_t)m < sizeof buf - (size_t)n - 1 ? (size_t)m : sizeof buf - (size_t)n - 2);
  buf[len++] = '\n';
  /* One write() so that lines from several threads/processes do not mix. */
  ssize_t w = write(2, buf, len);
  (void)w;
}

void cp_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vline(fmt, ap);
  va_end(ap);
}

void cp_info(const char *fmt, ...) {
  if (cp_config_get()->quiet) return;
  va_list ap;
  va_start(ap, fmt);
  vline(fmt, ap);
  va_end(ap);
}

/* ---- parsing ---- */

static void bad(const char *var, const char *val, const char *why, const char *def) {
  cp_warn("%s='%s': %s; using %s", var, val, why, def);
}

/* An unsigned number, decimal or 0x hex, no sign, no trailing text.
 * Returns 0 and sets *why on error. */
static int parse_u64(const char *s, uint64_t max, uint64_t *out, const char **why) {
  const char *p = s;
  while (isspace((unsigned char)*p)) p++;
  if (!*p) { *why = "empty"; return 0; }
  if (*p == '-' || *p == '+') { *why = "not an unsigned number"; return 0; }
  int base = 10;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
    base = 16;
    p += 2;
    if (!isxdigit((unsigned char)*p)) { *why = "not a hex number"; return 0; }
  } else if (!isdigit((unsigned char)*p)) {
    *why = "not a number";
    return 0;
  }
  errno = 0;
  char *end;
  unsigned long long v = strtoull(p, &end, base);
  while (isspace((unsigned char)*end)) end++;
  if (*end) { *why = "trailing characters"; return 0; }
  if (errno == ERANGE || v > max) { *why = "out of range"; return 0; }
  *out = v;
  return 1;
}

/* A number variable in [min, max]; unset or "" keeps *out (the default). */
static void get_num(const char *var, uint64_t min, uint64_t max, uint64_t *out) {
  const char *s = getenv(var);
  if (!s || !*s) return;
  uint64_t v;
  const char *why = NULL;
  char def[32];
  snprintf(def, sizeof def, "%llu", (unsigned long long)*out);
  if (!parse_u64(s, max, &v, &why)) { bad(var, s, why, def); return; }
  if (v < min) { bad(var, s, "out of range", def); return; }
  *out = v;
}

/* A switch: 1/0, yes/no, true/false, on/off (any case). */
static void get_bool(const char *var, int *out) {
  const char *s = getenv(var);
  if (!s || !*s) return;
  static const char *const on[] = {"1", "yes", "true", "on", "y"};
  static const char *const off[] = {"0", "no", "false", "off", "n"};
  for (size_t i = 0; i < sizeof on / sizeof on[0]; i++)
    if (!strcasecmp(s, on[i])) { *out = 1; return; }
  for (size_t i = 0; i < sizeof off / sizeof off[0]; i++)
    if (!strcasecmp(s, off[i])) { *out = 0; return; }
  bad(var, s, "not 0/1, yes/no, true/false or on/off", *out ? "1" : "0");
}

/* delay:duration[:repeat] exactly as profiling_windows.c reads it. */
static int periods_ok(const char *s, const char **why) {
  char *end;
  double d = strtod(s, &end);
  if (end == s || *end != ':' || !(d >= 0) || d > 1e9) { *why = "delay is not seconds >= 0 followed by ':'"; return 0; }
  const char *q = end + 1;
  double u = strtod(q, &end);
  if (end == q || !(u > 0) || u > 1e9) { *why = "duration is not seconds > 0"; return 0; }
  if (*end == ':') {
    q = end + 1;
    long r = strtol(q, &end, 10);
    if (end == q || r < 0) { *why = "repeat is not an integer >= 0"; return 0; }
  }
  if (*end) { *why = "not delay:duration[:repeat]"; return 0; }
  return 1;
}

static void choose_stamp_dir(void) {
  if (g_stamp_dir[0]) return;
  time_t now = time(NULL);
  struct tm tm;
  if (!localtime_r(&now, &tm)) memset(&tm, 0, sizeof tm);
  strftime(g_stamp_dir, sizeof g_stamp_dir, "collprof-%Y%m%d-%H%M%S", &tm);
}

static void load(cp_config *c) {
  memset(c, 0, sizeof *c);

  uint64_t v = DEF_MASK;
  const char *m = getenv("NCCL_PROFILE_EVENT_MASK");
  if (m && *m) {
    const char *why = NULL;
    if (parse_u64(m, 0x7fffffff, &v, &why)) c->mask_from_env = 1;
    else { bad("NCCL_PROFILE_EVENT_MASK", m, why, "4031"); v = DEF_MASK; }
  }
  c->event_mask = (uint32_t)v;

  v = !c->mask_from_env ? 16 : (c->event_mask & MASK_KERNELCH) ? 1 : 0;
  get_num("COLLPROF_GPU_SAMPLE", 0, 0x7fffffff, &v);
  c->gpu_sample = (int)v;

  v = 64;
  get_num("COLLPROF_LAUNCH_SAMPLE", 0, 0x7fffffff, &v);
  c->launch_sample = (int)v;

  v = 5000;
  get_num("COLLPROF_LAUNCH_INTERVAL_US", 0, 3600000000ull, &v);
  c->launch_interval_us = (uint32_t)v;

  v = 8;   /* launch_timer.h, "Runs": why 8 by default */
  get_num("COLLPROF_LAUNCH_RUN", 1, 1024, &v);
  c->launch_run = (uint32_t)v;

  /* "auto" (the default: host_sample.h) or a number */
  c->host_sample = CP_HOST_SAMPLE_AUTO;
  const char *hs = getenv("COLLPROF_HOST_SAMPLE");
  if (hs && *hs && strcasecmp(hs, "auto") != 0) {
    uint64_t n;
    const char *why = NULL;
    if (parse_u64(hs, 0x7fffffff, &n, &why)) c->host_sample = (int)n;
    else bad("COLLPROF_HOST_SAMPLE", hs, why, "auto");
  }
  /* unset: each thread seeds from its tid (tls.h, cp_thr_seed) */
  const char *seed = getenv("COLLPROF_SAMPLE_SEED");
  if (seed && *seed) {
    const char *why = NULL;
    if (parse_u64(seed, UINT64_MAX, &c->sample_seed, &why)) c->sample_seed_set = 1;
    else bad("COLLPROF_SAMPLE_SEED", seed, why, "a seed per thread id");
  }
  v = 1000;   /* host_sample.h: why 1 ms */
  get_num("COLLPROF_HOST_SAMPLE_US", 0, 3600000000ull, &v);
  c->host_sample_us = (uint32_t)v;

  v = 100;   /* cost_sample.c: why windows of 1 ms every 100 */
  get_num("COLLPROF_COST_SAMPLE_MS", 0, 3600000, &v);
  c->cost_sample_ms = (uint32_t)v;
  v = 1000;
  get_num("COLLPROF_COST_WINDOW_US", 1, 3600000000ull, &v);
  c->cost_window_us = (uint32_t)v;

  v = 2;
  get_num("COLLPROF_LAUNCH_RUN_GAP_US", 0, 1000000, &v);
  c->launch_run_gap_us = (uint32_t)v;

  v = 65536;   /* launch_timer.h, "Small calls": why 64 KiB */
  get_num("COLLPROF_LAUNCH_MIN_BYTES", 0, 1ull << 50, &v);
  c->launch_min_bytes = v;

  const char *p = getenv("COLLPROF_PERIODS");
  if (p && *p) {
    const char *why = NULL;
    if (strlen(p) >= sizeof c->periods) bad("COLLPROF_PERIODS", p, "too long", "no periods");
    else if (!periods_ok(p, &why)) bad("COLLPROF_PERIODS", p, why, "no periods");
    else strcpy(c->periods, p);
  }

  get_bool("COLLPROF_START_PAUSED", &c->start_paused);
  c->lean = 1;
  get_bool("COLLPROF_LEAN", &c->lean);
  v = 0;
  get_num("COLLPROF_GPU_SAMPLE_US", 0, 1000000000ull, &v);
  c->gpu_sample_us = (uint32_t)v;
  v = 16;
  get_num("COLLPROF_GPU_SAMPLE_SMALL", 1, 1024, &v);
  c->gpu_sample_small = (uint32_t)v;
  v = 1048576;
  get_num("COLLPROF_GPU_SAMPLE_SMALL_BYTES", 0, 1ull << 40, &v);
  /* up to a power of two: a size class (2^(k-1) to 2^k bytes, the GPU
   * estimate's unit) is then all small or all not, so its sampled calls
   * stand for its calls alike (gpu_sample_rule.c, "Small calls") */
  while (v & (v - 1)) v += v & -v;
  c->gpu_sample_small_bytes = v;
  v = 100;
  {
    const char *d = getenv("COLLPROF_GPU_SAMPLE_DELAY_MS");
    c->gpu_sample_delay_auto = 1;
    if (d && *d && strcasecmp(d, "auto") != 0) {   /* a number: that delay, always */
      uint64_t x;
      const char *why = NULL;
      if (parse_u64(d, 3600000, &x, &why)) v = x, c->gpu_sample_delay_auto = 0;
      else bad("COLLPROF_GPU_SAMPLE_DELAY_MS", d, why, "auto (100, none with one rank of each communicator)");
    }
  }
  c->gpu_sample_delay_ms = (uint32_t)v;

  c->trace_on = 1;
  get_bool("COLLPROF_TRACE", &c->trace_on);
  get_bool("COLLPROF_CAPTURE", &c->capture);
  get_bool("COLLPROF_PROXY_DEFER", &c->proxy_defer);
  get_bool("COLLPROF_QUIET", &c->quiet);

  v = DEF_POOL;
  get_num("COLLPROF_POOL_SIZE", 1, 1u << 24, &v);
  c->pool_size = (uint32_t)v;
  v = DEF_BLACKLIST;
  get_num("COLLPROF_BLACKLIST_CAP", 0, UINT64_MAX >> 1, &v);
  c->blacklist_cap = v;
  v = DEF_TRACE_BUF;
  get_num("COLLPROF_TRACE_BUFFER", 1, 1u << 24, &v);
  c->trace_buffer = (uint32_t)v;
  v = DEF_TRACE_NICE;
  get_num("COLLPROF_TRACE_NICE", 0, 19, &v);
  c->trace_nice = (int)v;

  choose_stamp_dir();
  const char *o = getenv("COLLPROF_OUTPUT_DIR");
  const char *job = getenv("SLURM_JOB_ID");
  if (o && *o && strlen(o) < sizeof c->output_dir - 32) {
    strcpy(c->output_dir, o);
    c->output_dir_from_env = 1;
  } else {
    if (o && *o) bad("COLLPROF_OUTPUT_DIR", o, "too long", g_stamp_dir);
    int job_ok = job && *job && strlen(job) < 64;
    for (const char *q = job; job_ok && *q; q++)
      if (!isalnum((unsigned char)*q) && *q != '_' && *q != '-' && *q != '.') job_ok = 0;
    if (job_ok) snprintf(c->output_dir, sizeof c->output_dir, "collprof-%s", job);
    else snprintf(c->output_dir, sizeof c->output_dir, "%s", g_stamp_dir);
  }
}

const cp_config *cp_config_get(void) {
  if (atomic_load_explicit(&g_loaded, memory_order_acquire)) return &g_cfg;
  pthread_mutex_lock(&g_mu);
  if (!atomic_load_explicit(&g_loaded, memory_order_relaxed)) {
    load(&g_cfg);
    atomic_store_explicit(&g_loaded, 1, memory_order_release);
  }
  pthread_mutex_unlock(&g_mu);
  return &g_cfg;
}

void cp_config_reload(void) {
  pthread_mutex_lock(&g_mu);
  /* Tests only: readers on other threads must not be running. */
  load(&g_cfg);
  atomic_store_explicit(&g_loaded, 1, memory_order_release);
  pthread_mutex_unlock(&g_mu);
}

#pragma GCC visibility pop
