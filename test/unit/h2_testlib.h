/*
 * h2_testlib.h — small helpers shared by the output-code unit tests
 * (test_json_escape, test_config, test_trace_writer): TAP printing, stderr
 * capture, running a python3 oracle, finding files next to the sources.
 * Header-only (static functions) so it is not linked into other tests.
 */
#ifndef H2_TESTLIB_H
#define H2_TESTLIB_H
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static int t_n, t_fail;

static int ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static int ok(int cond, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("%s %d - ", cond ? "ok" : "not ok", ++t_n);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
  if (!cond) t_fail++;
  return cond;
}

static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static void diag(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("# ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
}

static __attribute__((unused)) int done_testing(void) {
  printf("1..%d\n", t_n);
  return t_fail ? 1 : 0;
}

/* Redirect fd 2 into a temporary file; stderr_end() returns what was
 * written (malloc'd, NUL-terminated) and restores fd 2. */
static int t_saved_err = -1, t_err_fd = -1;
static __attribute__((unused)) void stderr_begin(void) {
  char tmpl[] = "/tmp/h2-stderr-XXXXXX";
  t_err_fd = mkstemp(tmpl);
  unlink(tmpl);
  fflush(stderr);
  t_saved_err = dup(2);
  dup2(t_err_fd, 2);
}
static __attribute__((unused)) char *stderr_end(void) {
  fflush(stderr);
  dup2(t_saved_err, 2);
  close(t_saved_err);
  off_t n = lseek(t_err_fd, 0, SEEK_END);
  char *buf = calloc(1, (size_t)n + 1);
  if (pread(t_err_fd, buf, (size_t)n, 0) < 0) buf[0] = 0;
  close(t_err_fd);
  return buf;
}

static __attribute__((unused)) int count_lines(const char *s) {
  int n = 0;
  for (; *s; s++) n += *s == '\n';
  return n;
}

static __attribute__((unused)) int count_substr(const char *s, const char *sub) {
  int n = 0;
  size_t k = strlen(sub);
  for (const char *p = s; (p = strstr(p, sub)); p += k) n++;
  return n;
}

/* A file of the source tree: searched upwards from the test binary
 * (build/.../test/x -> repo root).  0 when found. */
static __attribute__((unused)) int find_src(const char *rel, char *out, size_t cap) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = 0;
  for (int up = 0; up < 6; up++) {
    char *s = strrchr(exe, '/');
    if (!s) break;
    *s = 0;
    snprintf(out, cap, "%.3000s/%.900s", exe, rel);
    if (access(out, R_OK) == 0) return 0;
  }
  snprintf(out, cap, "%s", rel);
  return access(out, R_OK) == 0 ? 0 : -1;
}

static __attribute__((unused)) int have_python(void) {
  return system("python3 -c 'import json' >/dev/null 2>&1") == 0;
}

/* A private scratch folder, removed by rm_rf at the end. */
static __attribute__((unused)) void make_tmpdir(char *buf, size_t cap) {
  const char *base = getenv("TMPDIR");
  snprintf(buf, cap, "%s/h2test-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(buf)) buf[0] = 0;
}
static __attribute__((unused)) void rm_rf(const char *dir) {
  if (!dir[0]) return;
  char cmd[PATH_MAX + 32];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) { /* best effort */ }
}

#endif
