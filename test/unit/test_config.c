/*
 * test_config.c — environment parsing (src/config.c).
 *
 * Defaults, decimal and hex numbers, switches, the period syntax, the
 * output-folder rule, and for malformed values: exactly one warning line
 * "collprof: VAR='value': <why>; using <default>" per bad variable, and the
 * default in effect.
 */
#include "config.h"
#include "host_sample.h"
#include "h2_testlib.h"

#include <regex.h>

static const char *vars[] = {"NCCL_PROFILE_EVENT_MASK", "COLLPROF_GPU_SAMPLE", "COLLPROF_PERIODS",
                             "COLLPROF_TRACE", "COLLPROF_CAPTURE", "COLLPROF_QUIET",
                             "COLLPROF_POOL_SIZE", "COLLPROF_BLACKLIST_CAP",
                             "COLLPROF_TRACE_BUFFER", "COLLPROF_OUTPUT_DIR", "SLURM_JOB_ID",
                             "COLLPROF_LAUNCH_SAMPLE", "COLLPROF_LAUNCH_INTERVAL_US",
                             "COLLPROF_LAUNCH_RUN", "COLLPROF_LAUNCH_RUN_GAP_US", "COLLPROF_LAUNCH_MIN_BYTES",
                             "COLLPROF_TRACE_NICE",
                             "COLLPROF_HOST_SAMPLE", "COLLPROF_HOST_SAMPLE_US", "COLLPROF_START_PAUSED",
                             "COLLPROF_GPU_SAMPLE_US", "COLLPROF_GPU_SAMPLE_SMALL",
                             "COLLPROF_GPU_SAMPLE_SMALL_BYTES", "COLLPROF_LEAN", "COLLPROF_SAMPLE_SEED",
                             "COLLPROF_GPU_SAMPLE_DELAY_MS", "COLLPROF_COST_SAMPLE_MS",
                             "COLLPROF_COST_WINDOW_US"};

static void clear_env(void) {
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

/* Reload with stderr captured; returns the warnings (caller frees). */
static char *reload(void) {
  stderr_begin();
  cp_config_reload();
  return stderr_end();
}

static int matches(const char *s, const char *re) {
  regex_t r;
  if (regcomp(&r, re, REG_EXTENDED | REG_NEWLINE)) return 0;
  int m = regexec(&r, s, 0, NULL, 0) == 0;
  regfree(&r);
  return m;
}

/* Only var=val set, reloaded: the warnings (caller frees). */
static char *reload_with(const char *var, const char *val) {
  clear_env();
  setenv(var, val, 1);
  return reload();
}

/* One bad value of var: one warning line of the documented form. */
static void bad_value(const char *var, const char *val, const char *def) {
  char *w = reload_with(var, val);
  char re[512];
  snprintf(re, sizeof re, "^collprof: %s='[^\n]*': [^\n]+; using %s$", var, def);
  ok(count_lines(w) == 1 && matches(w, re), "%s='%s': one warning, using %s", var, val, def);
  if (count_lines(w) != 1 || !matches(w, re)) diag("stderr: %s", w);
  free(w);
}

int main(void) {
  clear_env();
  char *w = reload();
  const cp_config *c = cp_config_get();
  ok(w[0] == 0, "defaults: no warning");
  free(w);
  ok(c->event_mask == (4095u & ~64u) && !c->mask_from_env, "default mask is 4095 without KernelCh");
  ok(c->gpu_sample == 16, "default: GPU sampling on 1 call in 16");
  ok(c->host_sample == CP_HOST_SAMPLE_AUTO, "default: host sampling auto (COLLPROF_HOST_SAMPLE=auto)");
  ok(c->host_sample_us == 1000, "default: auto keeps timed calls 1000 us apart (COLLPROF_HOST_SAMPLE_US)");
  ok(c->cost_sample_ms == 100 && c->cost_window_us == 1000,
     "default: cost windows of 1000 us about every 100 ms (COLLPROF_COST_SAMPLE_MS, COLLPROF_COST_WINDOW_US)");
  ok(c->trace_on == 1 && c->capture == 0 && c->quiet == 0, "default switches");
  ok(c->start_paused == 0, "default: recording on from the start (COLLPROF_START_PAUSED=0)");
  ok(c->lean == 1, "default: lean calls (COLLPROF_LEAN=1)");
  ok(c->gpu_sample_us == 0, "default: GPU sampling exactly one call in N (COLLPROF_GPU_SAMPLE_US=0)");
  ok(c->gpu_sample_small == 16 && c->gpu_sample_small_bytes == 1048576,
     "default: calls under 1 MiB sampled one in 16 N (COLLPROF_GPU_SAMPLE_SMALL=16, _BYTES=1048576)");
  ok(c->pool_size == 1024 && c->blacklist_cap == 10000000ull && c->trace_buffer == 16384,
     "default sizes");
  ok(c->trace_nice == 10, "default: the trace writer runs at nice 10");
  ok(c->gpu_sample_delay_ms == 100, "default: no KernelCh sample in the first 100 ms (COLLPROF_GPU_SAMPLE_DELAY_MS)");
  ok(c->gpu_sample_delay_auto == 1, "default: the start delay is auto (none with one rank of each communicator)");
  ok(c->periods[0] == 0, "no periods by default");
  ok(c->launch_sample == 64 && c->launch_interval_us == 5000,
     "default: one launch in 64 timed, at least 5 ms apart on average");
  ok(c->launch_run == 8 && c->launch_run_gap_us == 2, "default: runs of up to 8 launches per event pair, gap 2 us");
  ok(matches(c->output_dir, "^collprof-[0-9]{8}-[0-9]{6}$") && !c->output_dir_from_env,
     "default folder collprof-YYYYMMDD-HHMMSS (%s)", c->output_dir);
  char stamp[4096];
  snprintf(stamp, sizeof stamp, "%s", c->output_dir);
  sleep(1);
  w = reload();
  ok(strcmp(stamp, c->output_dir) == 0, "the time-stamped folder is chosen once per process");
  free(w);

  setenv("NCCL_PROFILE_EVENT_MASK", "0x2", 1);
  w = reload();
  ok(!w[0] && c->event_mask == 2 && c->mask_from_env, "hex mask 0x2");
  ok(c->gpu_sample == 0, "user mask without KernelCh: no GPU sampling");
  free(w);
  setenv("NCCL_PROFILE_EVENT_MASK", "0XfF", 1);
  w = reload();
  ok(!w[0] && c->event_mask == 255, "hex mask with upper-case prefix and mixed digits");
  free(w);
  setenv("NCCL_PROFILE_EVENT_MASK", "4095", 1);
  w = reload();
  ok(!w[0] && c->event_mask == 4095 && c->gpu_sample == 1,
     "decimal mask 4095: KernelCh on every call");
  free(w);
  setenv("COLLPROF_GPU_SAMPLE", "8", 1);
  w = reload();
  ok(c->gpu_sample == 8, "COLLPROF_GPU_SAMPLE overrides");
  free(w);

  bad_value("NCCL_PROFILE_EVENT_MASK", "abc", "4031");
  ok(c->event_mask == 4031 && !c->mask_from_env, "bad mask falls back to the default");
  bad_value("NCCL_PROFILE_EVENT_MASK", "-1", "4031");
  bad_value("NCCL_PROFILE_EVENT_MASK", "0x", "4031");
  bad_value("NCCL_PROFILE_EVENT_MASK", "12z", "4031");
  bad_value("NCCL_PROFILE_EVENT_MASK", "99999999999", "4031");
  bad_value("COLLPROF_GPU_SAMPLE", "often", "16");
  ok(c->gpu_sample == 16, "bad GPU sample falls back to the default");
  bad_value("COLLPROF_TRACE", "maybe", "1");
  ok(c->trace_on == 1, "bad switch falls back");
  bad_value("COLLPROF_POOL_SIZE", "0", "1024");
  ok(c->pool_size == 1024, "zero pool size rejected");
  bad_value("COLLPROF_BLACKLIST_CAP", "1e6", "10000000");
  bad_value("COLLPROF_TRACE_BUFFER", "big", "16384");
  ok(c->trace_buffer == 16384, "bad trace buffer falls back");
  bad_value("COLLPROF_TRACE_NICE", "20", "10");
  bad_value("COLLPROF_TRACE_NICE", "-5", "10");
  bad_value("COLLPROF_TRACE_NICE", "low", "10");
  ok(c->trace_nice == 10, "bad trace writer nice value falls back to 10");
  bad_value("COLLPROF_HOST_SAMPLE", "-1", "auto");
  bad_value("COLLPROF_HOST_SAMPLE", "sometimes", "auto");
  ok(c->host_sample == CP_HOST_SAMPLE_AUTO, "bad host sample falls back to auto");
  w = reload_with("COLLPROF_HOST_SAMPLE", "1");
  ok(!w[0] && c->host_sample == 1, "COLLPROF_HOST_SAMPLE=1 (every call) taken");
  free(w);
  w = reload_with("COLLPROF_HOST_SAMPLE", "0");
  ok(!w[0] && c->host_sample == 0, "COLLPROF_HOST_SAMPLE=0 taken");
  free(w);
  setenv("COLLPROF_HOST_SAMPLE", "Auto", 1);   /* given explicitly, any case */
  setenv("COLLPROF_HOST_SAMPLE_US", "2500", 1);
  w = reload();
  ok(!w[0] && c->host_sample == CP_HOST_SAMPLE_AUTO && c->host_sample_us == 2500,
     "COLLPROF_HOST_SAMPLE=auto (any case) and COLLPROF_HOST_SAMPLE_US=2500 taken");
  free(w);
  ok(!c->sample_seed_set, "default: no COLLPROF_SAMPLE_SEED, each thread seeds from its id");
  w = reload_with("COLLPROF_SAMPLE_SEED", "0xfeedface12345678");
  ok(!w[0] && c->sample_seed_set && c->sample_seed == 0xfeedface12345678ull,
     "COLLPROF_SAMPLE_SEED=0xfeedface12345678 taken (64 bits)");
  free(w);
  w = reload_with("COLLPROF_SAMPLE_SEED", "0");
  ok(!w[0] && c->sample_seed_set && c->sample_seed == 0, "COLLPROF_SAMPLE_SEED=0 is a seed like any other");
  free(w);
  bad_value("COLLPROF_SAMPLE_SEED", "lucky", "a seed per thread id");
  ok(!c->sample_seed_set, "bad COLLPROF_SAMPLE_SEED: no seed, each thread seeds from its id");
  unsetenv("COLLPROF_SAMPLE_SEED");
  w = reload_with("COLLPROF_LEAN", "off");
  ok(!w[0] && c->lean == 0, "COLLPROF_LEAN=off taken");
  free(w);
  bad_value("COLLPROF_LEAN", "sometimes", "1");
  ok(c->lean == 1, "bad COLLPROF_LEAN falls back to 1");
  w = reload_with("COLLPROF_START_PAUSED", "yes");
  ok(!w[0] && c->start_paused == 1, "COLLPROF_START_PAUSED=yes taken");
  free(w);
  bad_value("COLLPROF_START_PAUSED", "later", "0");
  w = reload_with("COLLPROF_GPU_SAMPLE_US", "500");
  ok(!w[0] && c->gpu_sample_us == 500, "COLLPROF_GPU_SAMPLE_US=500 (samples spaced in time) taken");
  free(w);
  bad_value("COLLPROF_GPU_SAMPLE_US", "often", "0");
  w = reload_with("COLLPROF_GPU_SAMPLE_SMALL", "1");
  ok(!w[0] && c->gpu_sample_small == 1, "COLLPROF_GPU_SAMPLE_SMALL=1 (one in N for every call) taken");
  free(w);
  bad_value("COLLPROF_GPU_SAMPLE_SMALL", "0", "16");
  bad_value("COLLPROF_GPU_SAMPLE_SMALL", "5000", "16");
  w = reload_with("COLLPROF_GPU_SAMPLE_SMALL_BYTES", "50000");
  ok(!w[0] && c->gpu_sample_small_bytes == 65536, "COLLPROF_GPU_SAMPLE_SMALL_BYTES=50000: 65536 (%llu), "
     "a power of two", (unsigned long long)c->gpu_sample_small_bytes);
  free(w);
  w = reload_with("COLLPROF_GPU_SAMPLE_SMALL_BYTES", "4096");
  ok(!w[0] && c->gpu_sample_small_bytes == 4096, "COLLPROF_GPU_SAMPLE_SMALL_BYTES=4096 taken as it is");
  free(w);
  w = reload_with("COLLPROF_GPU_SAMPLE_SMALL_BYTES", "0");
  ok(!w[0] && c->gpu_sample_small_bytes == 0, "COLLPROF_GPU_SAMPLE_SMALL_BYTES=0: no call is small");
  free(w);
  bad_value("COLLPROF_GPU_SAMPLE_SMALL_BYTES", "big", "1048576");
  w = reload_with("COLLPROF_GPU_SAMPLE_DELAY_MS", "0");
  ok(!w[0] && c->gpu_sample_delay_ms == 0 && !c->gpu_sample_delay_auto, "COLLPROF_GPU_SAMPLE_DELAY_MS=0: no start delay");
  free(w);
  w = reload_with("COLLPROF_GPU_SAMPLE_DELAY_MS", "100");
  ok(!w[0] && c->gpu_sample_delay_ms == 100 && !c->gpu_sample_delay_auto,
     "COLLPROF_GPU_SAMPLE_DELAY_MS=100: that delay, whatever the communicators (not auto)");
  free(w);
  w = reload_with("COLLPROF_GPU_SAMPLE_DELAY_MS", "AUTO");
  ok(!w[0] && c->gpu_sample_delay_ms == 100 && c->gpu_sample_delay_auto, "COLLPROF_GPU_SAMPLE_DELAY_MS=AUTO: the default rule");
  free(w);
  bad_value("COLLPROF_GPU_SAMPLE_DELAY_MS", "-5", "auto \\(100, none with one rank of each communicator\\)");
  bad_value("COLLPROF_GPU_SAMPLE_DELAY_MS", "3600001", "auto \\(100, none with one rank of each communicator\\)");
  ok(c->gpu_sample_delay_ms == 100 && c->gpu_sample_delay_auto, "bad COLLPROF_GPU_SAMPLE_DELAY_MS falls back to auto");
  ok(c->start_paused == 0, "bad COLLPROF_START_PAUSED falls back to 0");
  bad_value("COLLPROF_HOST_SAMPLE_US", "soon", "1000");
  ok(c->host_sample_us == 1000, "bad COLLPROF_HOST_SAMPLE_US falls back to 1000");
  bad_value("COLLPROF_COST_SAMPLE_MS", "often", "100");
  bad_value("COLLPROF_COST_SAMPLE_MS", "3600001", "100");
  ok(c->cost_sample_ms == 100, "bad COLLPROF_COST_SAMPLE_MS falls back to 100");
  bad_value("COLLPROF_COST_WINDOW_US", "0", "1000");
  ok(c->cost_window_us == 1000, "bad COLLPROF_COST_WINDOW_US (0) falls back to 1000");
  w = reload_with("COLLPROF_COST_SAMPLE_MS", "0");
  ok(!w[0] && c->cost_sample_ms == 0, "COLLPROF_COST_SAMPLE_MS=0 taken (no windows)");
  free(w);
  bad_value("COLLPROF_PERIODS", "10", "no periods");
  bad_value("COLLPROF_PERIODS", "a:b", "no periods");
  bad_value("COLLPROF_PERIODS", "1:0", "no periods");
  bad_value("COLLPROF_PERIODS", "1:2:-1", "no periods");
  bad_value("COLLPROF_PERIODS", "1:2:3x", "no periods");
  ok(c->periods[0] == 0, "bad periods: none");
  bad_value("COLLPROF_LAUNCH_SAMPLE", "often", "64");
  ok(c->launch_sample == 64, "bad launch sample falls back to the default");
  bad_value("COLLPROF_LAUNCH_INTERVAL_US", "5ms", "5000");
  bad_value("COLLPROF_LAUNCH_INTERVAL_US", "99999999999", "5000");
  ok(c->launch_interval_us == 5000, "bad or too long launch interval falls back to the default");
  w = reload_with("COLLPROF_LAUNCH_INTERVAL_US", "0");
  ok(!w[0] && c->launch_interval_us == 0, "COLLPROF_LAUNCH_INTERVAL_US=0: one in N only");
  free(w);
  clear_env();
  bad_value("COLLPROF_LAUNCH_RUN", "0", "8");
  bad_value("COLLPROF_LAUNCH_RUN", "2000", "8");
  bad_value("COLLPROF_LAUNCH_RUN_GAP_US", "2us", "2");
  ok(c->launch_run == 8 && c->launch_run_gap_us == 2, "bad run length or gap falls back to the default");
  setenv("COLLPROF_LAUNCH_RUN", "1", 1);
  setenv("COLLPROF_LAUNCH_RUN_GAP_US", "0", 1);
  w = reload();
  ok(!w[0] && c->launch_run == 1 && c->launch_run_gap_us == 0, "COLLPROF_LAUNCH_RUN=1, gap 0 taken");
  free(w);
  clear_env();
  w = reload();
  ok(!w[0] && c->launch_min_bytes == 65536, "COLLPROF_LAUNCH_MIN_BYTES: 64 KiB by default");
  free(w);
  bad_value("COLLPROF_LAUNCH_MIN_BYTES", "64k", "65536");
  ok(c->launch_min_bytes == 65536, "a bad least launch size falls back to the default");
  w = reload_with("COLLPROF_LAUNCH_MIN_BYTES", "0");
  ok(!w[0] && c->launch_min_bytes == 0, "COLLPROF_LAUNCH_MIN_BYTES=0: launches of any size");
  free(w);

  clear_env();
  setenv("COLLPROF_PERIODS", "0.5:2.5:3", 1);
  setenv("COLLPROF_TRACE", "off", 1);
  setenv("COLLPROF_CAPTURE", "yes", 1);
  setenv("COLLPROF_QUIET", "TRUE", 1);
  setenv("COLLPROF_POOL_SIZE", "0x100", 1);
  setenv("COLLPROF_BLACKLIST_CAP", "0", 1);
  setenv("COLLPROF_TRACE_BUFFER", "4", 1);
  setenv("COLLPROF_TRACE_NICE", "0", 1);
  setenv("SLURM_JOB_ID", "12345", 1);
  w = reload();
  ok(!w[0], "good values: no warning");
  free(w);
  ok(strcmp(c->periods, "0.5:2.5:3") == 0, "periods stored as given");
  ok(c->trace_on == 0 && c->capture == 1 && c->quiet == 1, "switches off/yes/TRUE");
  ok(c->pool_size == 256 && c->blacklist_cap == 0 && c->trace_buffer == 4, "sizes in hex and decimal");
  ok(c->trace_nice == 0, "COLLPROF_TRACE_NICE=0 taken");
  ok(strcmp(c->output_dir, "collprof-12345") == 0 && !c->output_dir_from_env,
     "folder from SLURM_JOB_ID");
  setenv("COLLPROF_OUTPUT_DIR", "/tmp/somewhere", 1);
  w = reload();
  ok(strcmp(c->output_dir, "/tmp/somewhere") == 0 && c->output_dir_from_env,
     "COLLPROF_OUTPUT_DIR wins");
  free(w);

  stderr_begin();
  cp_info("hidden %d", 1);
  w = stderr_end();
  ok(w[0] == 0, "cp_info is silent under COLLPROF_QUIET");
  free(w);
  stderr_begin();
  cp_warn("seen %d", 2);
  w = stderr_end();
  ok(strcmp(w, "collprof: seen 2\n") == 0, "cp_warn prints one collprof: line even when quiet");
  free(w);

  /* Several bad values at once: one line each. */
  clear_env();
  setenv("NCCL_PROFILE_EVENT_MASK", "x", 1);
  setenv("COLLPROF_POOL_SIZE", "-3", 1);
  setenv("COLLPROF_QUIET", "2", 1);
  w = reload();
  ok(count_lines(w) == 3 && count_substr(w, "collprof: ") == 3, "three bad variables: three lines");
  free(w);
  clear_env();
  return done_testing();
}
