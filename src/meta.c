/*
 * meta.c — the meta record, first line of each trace file (meta.h):
 *   {"recordType":"meta","tool":"collprof","version":..,"pid":..,"host":..,
 *    "wallTime":"<ISO 8601 UTC>","wallNs":..,"ts":<monotonic us>,
 *    "eventMask":..,"config":{...every setting in effect...},"command":".."}
 * wallTime/wallNs and ts are read back to back, so a reader can map every
 * ts of the file to wall-clock time.  ts comes from collprof_now_ns(), the
 * clock of every other timestamp collprof writes.
 */
#include "meta.h"
#include "collprof.h"
#include "config.h"
#include "host_sample.h"
#include "jfmt.h"
#include "output.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#pragma GCC visibility push(hidden)

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static char g_line[24576];
static size_t g_len;
static char g_cmd[8192];
static char g_host[256];

void cp_iso8601(int64_t wall_ns, char *buf, size_t cap) {
  time_t s = (time_t)(wall_ns / 1000000000);
  struct tm tm;
  if (!gmtime_r(&s, &tm)) memset(&tm, 0, sizeof tm);
  char date[32];
  strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf, cap, "%s.%06dZ", date, (int)(wall_ns % 1000000000 / 1000));
}

static void read_cmdline(void) {
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  size_t n = 0;
  if (fd >= 0) {
    ssize_t r;
    while (n < sizeof g_cmd - 1 && (r = read(fd, g_cmd + n, sizeof g_cmd - 1 - n)) > 0) n += (size_t)r;
    close(fd);
  }
  while (n && g_cmd[n - 1] == 0) n--;
  for (size_t i = 0; i < n; i++)
    if (!g_cmd[i]) g_cmd[i] = ' ';
  g_cmd[n] = 0;
}

static void build(void) {
  read_cmdline();
  if (gethostname(g_host, sizeof g_host) != 0) g_host[0] = 0;
  g_host[sizeof g_host - 1] = 0;

  const cp_config *c = cp_config_get();
  struct timespec w;
  clock_gettime(CLOCK_REALTIME, &w);
  uint64_t mono = collprof_now_ns();
  int64_t wall = (int64_t)w.tv_sec * 1000000000 + w.tv_nsec;
  char iso[64];
  cp_iso8601(wall, iso, sizeof iso);

  char *p = g_line;
  p = JF_LIT(p, "{\"recordType\":\"meta\",\"tool\":\"collprof\",\"version\":\"" COLLPROF_VERSION "\",\"pid\":");
  p = jf_i64(p, getpid());
  p = JF_LIT(p, ",\"host\":");
  p = jf_str(p, g_host, 1024);
  p = JF_LIT(p, ",\"wallTime\":");
  p = jf_str(p, iso, 128);
  p = JF_LIT(p, ",\"wallNs\":");
  p = jf_i64(p, wall);
  p = JF_LIT(p, ",\"ts\":");
  p = jf_us3(p, mono);
  p = JF_LIT(p, ",\"eventMask\":");
  p = jf_u64(p, c->event_mask);
  p = JF_LIT(p, ",\"config\":{\"eventMask\":");
  p = jf_u64(p, c->event_mask);
  p = JF_LIT(p, ",\"maskFromEnv\":");
  p = jf_bool(p, c->mask_from_env);
  p = JF_LIT(p, ",\"gpuSample\":");
  p = jf_i64(p, c->gpu_sample);
  p = JF_LIT(p, ",\"gpuSampleUs\":");
  p = jf_u64(p, c->gpu_sample_us);
  p = JF_LIT(p, ",\"gpuSampleSmall\":");
  p = jf_u64(p, c->gpu_sample_small);
  p = JF_LIT(p, ",\"gpuSampleSmallBytes\":");
  p = jf_u64(p, c->gpu_sample_small_bytes);
  p = JF_LIT(p, ",\"gpuSampleDelayMs\":");
  p = jf_u64(p, c->gpu_sample_delay_ms);
  p = JF_LIT(p, ",\"periods\":");
  p = jf_str(p, c->periods, 768);
  p = JF_LIT(p, ",\"trace\":");
  p = jf_bool(p, c->trace_on);
  p = JF_LIT(p, ",\"capture\":");
  p = jf_bool(p, c->capture);
  p = JF_LIT(p, ",\"quiet\":");
  p = jf_bool(p, c->quiet);
  p = JF_LIT(p, ",\"poolSize\":");
  p = jf_u64(p, c->pool_size);
  p = JF_LIT(p, ",\"blacklistCap\":");
  p = jf_u64(p, c->blacklist_cap);
  p = JF_LIT(p, ",\"traceBuffer\":");
  p = jf_u64(p, c->trace_buffer);
  p = JF_LIT(p, ",\"traceNice\":");
  p = jf_u64(p, (uint64_t)c->trace_nice);
  p = JF_LIT(p, ",\"hostSample\":");
  p = c->host_sample == CP_HOST_SAMPLE_AUTO ? JF_LIT(p, "\"auto\"") : jf_i64(p, c->host_sample);
  p = JF_LIT(p, ",\"hostSampleUs\":");
  p = jf_u64(p, c->host_sample_us);
  p = JF_LIT(p, ",\"launchSample\":");
  p = jf_i64(p, c->launch_sample);
  p = JF_LIT(p, ",\"launchIntervalUs\":");
  p = jf_u64(p, c->launch_interval_us);
  p = JF_LIT(p, ",\"launchRun\":");
  p = jf_u64(p, c->launch_run);
  p = JF_LIT(p, ",\"launchRunGapUs\":");
  p = jf_u64(p, c->launch_run_gap_us);
  p = JF_LIT(p, ",\"launchMinBytes\":");
  p = jf_u64(p, c->launch_min_bytes);
  p = JF_LIT(p, ",\"outputDir\":");
  p = jf_str(p, cp_output_dir(), 4096);   /* 6x of a name < 4096 does not fit: cut */
  p = JF_LIT(p, "},\"command\":");
  /* Room left for the command and the closing "}\n". */
  size_t room = sizeof g_line - (size_t)(p - g_line) - 8;
  *p++ = '"';
  p += cp_json_escape_str(p, room, g_cmd);
  p = JF_LIT(p, "\"}\n");
  g_len = (size_t)(p - g_line);
}

void cp_meta_init(void) { pthread_once(&g_once, build); }

const char *cp_meta_line(size_t *len) {
  *len = g_len;
  return g_line;
}

const char *cp_meta_command(void) {
  cp_meta_init();
  return g_cmd;
}

const char *cp_meta_host(void) {
  cp_meta_init();
  return g_host;
}

#pragma GCC visibility pop
