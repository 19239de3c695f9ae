/*
 * collprof.c — the `collprof` launcher: `collprof [options] [--] program
 * [args...]`, alone or once per rank under mpirun/srun/torchrun.
 *
 * It only prepares the environment and execs the program, so it adds no
 * process and no cost (--collate excepted: it waits for the program and
 * then collates, collate_after.c): LD_PRELOAD gets libcollprof-mpi.so (MPI programs:
 * the MPI_Init/MPI_Finalize wrappers that collate at the end) or
 * libcollprof.so (programs without MPI) prepended to whatever the user
 * preloads; NCCL_PROFILER_PLUGIN names libcollprof.so by absolute path; each
 * option becomes the COLLPROF_* / NCCL_PROFILE_EVENT_MASK variable the
 * plugin reads (so every option can also be given as a variable).  The
 * libraries are found next to the launcher (<bindir>/../lib, the same in
 * the build and the install tree) unless COLLPROF_LIBDIR says otherwise.
 *
 * Exit status: the program's own (exec; with --collate 128 + the signal
 * that ended it), 2 for bad options (the program is not started), 127
 * program not found, 126 not executable, 1 libraries missing.
 */
#include "collprof.h"
#include "collate_after.h"
#include "elf_needed.h"
#include "events.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *cp_prog = "collprof";

static void cp_usage(FILE *f) {
  fprintf(f,
    "Usage: %s [options] [--] program [args...]\n"
    "Run program with the collprof NCCL profiler: every NCCL event with its call\n"
    "path, per-rank JSONL traces, and a summary of all ranks at MPI_Finalize.\n"
    "Under MPI, start it once per rank: mpirun -np 8 collprof -o run1 -- ./train\n"
    "\n"
    "Options (each also settable by the variable in brackets):\n"
    "  -o, --output DIR        output folder [COLLPROF_OUTPUT_DIR]; default\n"
    "                          collprof-<SLURM_JOB_ID> or collprof-<YYYYMMDD-HHMMSS>\n"
    "  -e, --events LIST       event types: names like Coll,P2p,KernelCh (any case;\n"
    "                          also all, default, none) or a number like 0xfff\n"
    "                          [NCCL_PROFILE_EVENT_MASK]\n"
    "      --trace, --no-trace write the per-event trace, or only the per-path\n"
    "                          profile [COLLPROF_TRACE=1|0] (default: trace)\n"
    "      --gpu-sample N      GPU timing (KernelCh) on 1 API call in N; 1 every\n"
    "                          call, 0 never [COLLPROF_GPU_SAMPLE] (default 16;\n"
    "                          calls under 1 MiB: 1 in 16N, COLLPROF_GPU_SAMPLE_SMALL)\n"
    "      --host-sample N     time and trace 1 API call in N, count every call\n"
    "                          (times become estimates) [COLLPROF_HOST_SAMPLE];\n"
    "                          1: every call; default auto: N from each\n"
    "                          thread's call rate, timed calls about\n"
    "                          COLLPROF_HOST_SAMPLE_US (1000) apart\n"
    "      --seed S            seed the sampling draws: the same calls timed in\n"
    "                          every run of a deterministic program (and with\n"
    "                          a fixed --host-sample N on every rank)\n"
    "                          [COLLPROF_SAMPLE_SEED] (default: each thread\n"
    "                          seeds from its thread id)\n"
    "      --periods D:T[:R]   profile only in windows: off D seconds, on T seconds,\n"
    "                          R times (default 1, 0 for ever) [COLLPROF_PERIODS]\n"
    "      --paused            start with recording off, until the program calls\n"
    "                          collprof_resume() [COLLPROF_START_PAUSED=1]\n"
    "      --rank-logs WHICH   per-rank logfiles: all, none or a list like 0,4-7\n"
    "                          [COLLPROF_RANK_LOGS] (default none)\n"
    "      --capture           also record every NCCL callback as a replayable\n"
    "                          capture [COLLPROF_CAPTURE=1]\n"
    "      --collate           without MPI: run the program as a child and, when it\n"
    "                          has ended, collate the output folder (-o) into\n"
    "                          summary.log, report.html and sizes.txt there, e.g.\n"
    "                          collprof --collate -o run1 -- torchrun ... train.py\n"
    "                          [COLLPROF_COLLATE=1]\n"
    "  -q, --quiet             only warnings on stderr [COLLPROF_QUIET=1]\n"
    "      --mpi, --no-mpi     preload the MPI layer or not [COLLPROF_MPI=1|0]\n"
    "                          (default: detected from the program and mpirun)\n"
    "      --list-events       event types, their bits and costs, the default mask\n"
    "  -h, --help              this help\n"
    "  -V, --version           version\n"
    "\n"
    "Libraries come from <dir of collprof>/../lib [COLLPROF_LIBDIR].\n"
    "Offline summary and reports: collprof-collate DIR [--chrome F] [--html F] [--sizes F].\n"
    "See collprof(1) and collprof(7).\n",
    cp_prog);
}

static void cp_bad(const char *fmt, const char *a, const char *b) {
  fprintf(stderr, "%s: ", cp_prog);
  fprintf(stderr, fmt, a, b);
  fprintf(stderr, "\nUsage: %s [options] [--] program [args...]\n"
                  "Try '%s --help' for the options.\n", cp_prog, cp_prog);
  exit(2);
}

/* Non-negative decimal integer that fits an int. */
static int cp_parse_uint(const char *s, long *out) {
  char *end = NULL;
  errno = 0;
  if (!s || !*s || *s == '-' || *s == '+') return -1;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < 0 || v > INT_MAX) return -1;
  *out = v;
  return 0;
}

/* A 64-bit seed as the plugin reads COLLPROF_SAMPLE_SEED (config.c):
 * decimal or 0x hex digits, nothing else, no overflow. */
static int cp_check_seed(const char *s) {
  const int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const char *p = hex ? s + 2 : s;
  if (!*p) return -1;
  for (const char *q = p; *q; q++)
    if (hex ? !isxdigit((unsigned char)*q) : !isdigit((unsigned char)*q)) return -1;
  errno = 0;
  (void)strtoull(p, NULL, hex ? 16 : 10);
  return errno ? -1 : 0;
}

/* Non-negative decimal number of seconds ("1", "0.5"). */
static int cp_parse_secs(const char *s, size_t n, double *out) {
  char buf[64];
  if (n == 0 || n >= sizeof buf || s[0] == '-' || s[0] == '+') return -1;
  memcpy(buf, s, n);
  buf[n] = 0;
  for (size_t i = 0; i < n; i++)
    if (!((buf[i] >= '0' && buf[i] <= '9') || buf[i] == '.')) return -1;
  char *end = NULL;
  double v = strtod(buf, &end);
  if (*end || v < 0) return -1;
  *out = v;
  return 0;
}

/* delay:duration[:repeat] */
static int cp_check_periods(const char *s) {
  const char *c1 = strchr(s, ':');
  if (!c1) return -1;
  const char *c2 = strchr(c1 + 1, ':');
  double d, t;
  if (cp_parse_secs(s, (size_t)(c1 - s), &d)) return -1;
  size_t tn = c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1);
  if (cp_parse_secs(c1 + 1, tn, &t) || t <= 0) return -1;
  long r;
  if (c2 && cp_parse_uint(c2 + 1, &r)) return -1;
  return 0;
}

/* all | none | 0,3,5-7 */
static int cp_check_rank_list(const char *s) {
  if (!strcasecmp(s, "all") || !strcasecmp(s, "none")) return 0;
  const char *p = s;
  for (;;) {
    char *end;
    if (*p < '0' || *p > '9') return -1;
    long a = strtol(p, &end, 10), b = a;
    if (*end == '-') {
      if (end[1] < '0' || end[1] > '9') return -1;
      b = strtol(end + 1, &end, 10);
    }
    if (a < 0 || b < a || b > INT_MAX) return -1;
    if (*end == 0) return 0;
    if (*end != ',') return -1;
    p = end + 1;
  }
}

/* The folder with libcollprof.so: $COLLPROF_LIBDIR, else <exe dir>/../lib. */
static int cp_libdir(char *out, size_t len) {
  const char *env = getenv("COLLPROF_LIBDIR");
  char exe[PATH_MAX], cand[PATH_MAX + 16];
  if (env && *env) {
    if (!realpath(env, out)) return -1;
    return 0;
  }
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return -1;
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  if (!slash) return -1;
  *slash = 0;
  static const char *rel[] = {"/../lib", "/../lib64"};
  for (size_t i = 0; i < 2; i++) {
    snprintf(cand, sizeof cand, "%s%s/libcollprof.so", exe, rel[i]);
    if (access(cand, R_OK) == 0) {
      snprintf(cand, sizeof cand, "%s%s", exe, rel[i]);
      if (realpath(cand, out)) return 0;
    }
  }
  (void)len;
  return -1;
}

/* Was this process started by an MPI launcher? */
static int cp_mpi_env(void) {
  static const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                               "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MV2_COMM_WORLD_RANK",
                               "I_MPI_RANK", "HYDRA_CONTROL_FD"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (getenv(vars[i])) return 1;
  return 0;
}

/* Started as one task of a job of several without MPI: the variable that
 * says so, or NULL.  Each names the tasks of this launch alone (not of an
 * allocation, as SLURM_NTASKS does in a batch script): torchrun's and
 * DeepSpeed's workers (WORLD_SIZE), an srun step, a Flux job, an LSF
 * jsrun launch, Horovod's workers without MPI (gloo). */
static const char *cp_one_of_several(void) {
  static const char *vars[] = {"WORLD_SIZE", "SLURM_STEP_NUM_TASKS", "FLUX_JOB_SIZE", "JSM_NAMESPACE_SIZE",
                               "HOROVOD_SIZE"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *v = getenv(vars[i]);
    if (v && atol(v) > 1) return vars[i];
  }
  return NULL;
}

/* Is `lib` already one of the entries of the LD_PRELOAD list `list`? */
static int cp_in_list(const char *list, const char *lib) {
  size_t n = strlen(lib);
  for (const char *p = list; p && *p;) {
    size_t k = strcspn(p, ": ");
    if (k == n && strncmp(p, lib, n) == 0) return 1;
    p += k;
    p += strspn(p, ": ");
  }
  return 0;
}

static void cp_setenv(const char *k, const char *v) {
  if (setenv(k, v, 1) != 0) {
    fprintf(stderr, "%s: cannot set %s: %s\n", cp_prog, k, strerror(errno));
    exit(1);
  }
}

static const char *cp_basename(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

enum { OPT_TRACE = 256, OPT_NO_TRACE, OPT_GPU_SAMPLE, OPT_HOST_SAMPLE, OPT_SEED, OPT_PERIODS, OPT_PAUSED, OPT_RANK_LOGS,
       OPT_CAPTURE, OPT_MPI, OPT_NO_MPI, OPT_LIST_EVENTS, OPT_COLLATE };

int main(int argc, char **argv) {
  static const struct option longopts[] = {
    {"output", required_argument, 0, 'o'},   {"events", required_argument, 0, 'e'},
    {"trace", no_argument, 0, OPT_TRACE},     {"no-trace", no_argument, 0, OPT_NO_TRACE},
    {"gpu-sample", required_argument, 0, OPT_GPU_SAMPLE},
    {"host-sample", required_argument, 0, OPT_HOST_SAMPLE},
    {"seed", required_argument, 0, OPT_SEED},
    {"periods", required_argument, 0, OPT_PERIODS},
    {"paused", no_argument, 0, OPT_PAUSED},
    {"rank-logs", required_argument, 0, OPT_RANK_LOGS},
    {"capture", no_argument, 0, OPT_CAPTURE}, {"quiet", no_argument, 0, 'q'},
    {"collate", no_argument, 0, OPT_COLLATE},
    {"mpi", no_argument, 0, OPT_MPI},         {"no-mpi", no_argument, 0, OPT_NO_MPI},
    {"list-events", no_argument, 0, OPT_LIST_EVENTS},
    {"help", no_argument, 0, 'h'},            {"version", no_argument, 0, 'V'},
    {0, 0, 0, 0}};
  const char *output = NULL, *periods = NULL, *rank_logs = NULL, *seed = NULL;
  int trace = -1, capture = 0, quiet = 0, mpi = -1, list_events = 0, have_mask = 0, paused = 0, collate = 0;
  enum { HOST_SAMPLE_AUTO = -2 };   /* -1: not given */
  long gpu_sample = -1, host_sample = -1;
  uint32_t mask = 0;
  char err[256];

  opterr = 0; /* our own messages, then the usage */
  int c;
  while ((c = getopt_long(argc, argv, "+:o:e:qhV", longopts, NULL)) != -1) {
    switch (c) {
    case 'o':
      if (!*optarg) cp_bad("empty output folder%s%s", "", "");
      output = optarg;
      break;
    case 'e':
      if (cp_events_parse(optarg, &mask, err, sizeof err)) cp_bad("-e: %s%s", err, "");
      have_mask = 1;
      break;
    case OPT_TRACE: trace = 1; break;
    case OPT_NO_TRACE: trace = 0; break;
    case OPT_GPU_SAMPLE:
      if (cp_parse_uint(optarg, &gpu_sample))
        cp_bad("--gpu-sample: '%s' is not a number >= 0%s", optarg, "");
      break;
    case OPT_HOST_SAMPLE:
      if (!strcasecmp(optarg, "auto")) host_sample = HOST_SAMPLE_AUTO;
      else if (cp_parse_uint(optarg, &host_sample))
        cp_bad("--host-sample: '%s' is not a number >= 0 or auto%s", optarg, "");
      break;
    case OPT_SEED:
      if (cp_check_seed(optarg))
        cp_bad("--seed: '%s' is not a number of up to 64 bits (decimal or 0x hex)%s", optarg, "");
      seed = optarg;
      break;
    case OPT_PERIODS:
      if (cp_check_periods(optarg))
        cp_bad("--periods: '%s' is not delay:duration[:repeat] (seconds, duration > 0)%s",
               optarg, "");
      periods = optarg;
      break;
    case OPT_RANK_LOGS:
      if (cp_check_rank_list(optarg))
        cp_bad("--rank-logs: '%s' is not all, none or a list like 0,2-3%s", optarg, "");
      rank_logs = optarg;
      break;
    case OPT_PAUSED: paused = 1; break;
    case OPT_CAPTURE: capture = 1; break;
    case OPT_COLLATE: collate = 1; break;
    case 'q': quiet = 1; break;
    case OPT_MPI: mpi = 1; break;
    case OPT_NO_MPI: mpi = 0; break;
    case OPT_LIST_EVENTS: list_events = 1; break;
    case 'h': cp_usage(stdout); return 0;
    case 'V': printf("collprof %s\n", COLLPROF_VERSION); return 0;
    case ':':
      cp_bad("option %s needs a value%s", argv[optind - 1], "");
      break;
    default:
      if (optopt && optopt < 256)
        snprintf(err, sizeof err, "-%c", optopt);
      else
        snprintf(err, sizeof err, "%s", argv[optind - 1]);
      /* getopt reports a missing argument as '?' when optstring lacks ':'. */
      cp_bad("unknown option or missing value: %s%s", err, "");
    }
  }
  if (list_events) {
    cp_events_list(stdout);
    if (have_mask) {
      char names[256];
      printf("\nSelected with -e: %#x (%u) = %s\n", mask, mask,
             cp_events_names(mask, names, sizeof names));
    }
    return 0;
  }
  if (optind >= argc) cp_bad("no program given%s%s", "", "");
  const char *program = argv[optind];

  /* Options become variables; what the user set in the environment and no
   * option overrides passes through unchanged. */
  if (output) {
    char abs[PATH_MAX * 2];
    if (output[0] != '/') {
      char cwd[PATH_MAX];
      if (!getcwd(cwd, sizeof cwd)) {
        fprintf(stderr, "%s: cannot read the current folder: %s\n", cp_prog, strerror(errno));
        return 1;
      }
      snprintf(abs, sizeof abs, "%s/%s", cwd, output);
      output = abs;
    }
    cp_setenv("COLLPROF_OUTPUT_DIR", output);
  }
  char num[32];
  if (have_mask) {
    snprintf(num, sizeof num, "%u", mask);
    cp_setenv("NCCL_PROFILE_EVENT_MASK", num);
  }
  if (trace >= 0) cp_setenv("COLLPROF_TRACE", trace ? "1" : "0");
  if (gpu_sample >= 0) {
    snprintf(num, sizeof num, "%ld", gpu_sample);
    cp_setenv("COLLPROF_GPU_SAMPLE", num);
  }
  if (host_sample == HOST_SAMPLE_AUTO) {
    cp_setenv("COLLPROF_HOST_SAMPLE", "auto");
  } else if (host_sample >= 0) {
    snprintf(num, sizeof num, "%ld", host_sample);
    cp_setenv("COLLPROF_HOST_SAMPLE", num);
  }
  if (seed) cp_setenv("COLLPROF_SAMPLE_SEED", seed);
  if (periods) cp_setenv("COLLPROF_PERIODS", periods);
  if (paused) cp_setenv("COLLPROF_START_PAUSED", "1");
  if (rank_logs) cp_setenv("COLLPROF_RANK_LOGS", rank_logs);
  if (capture) cp_setenv("COLLPROF_CAPTURE", "1");
  if (quiet) cp_setenv("COLLPROF_QUIET", "1");
  if (!quiet) {
    const char *q = getenv("COLLPROF_QUIET");
    quiet = q && *q && strcmp(q, "0") != 0;
  }

  /* The program: found like execvp finds it (exit 127 like a shell). */
  char path[PATH_MAX];
  if (cp_find_program(program, path, sizeof path) != 0) {
    struct stat st;
    if (strchr(program, '/') && stat(program, &st) == 0) {
      fprintf(stderr, "%s: %s: not an executable file\n", cp_prog, program);
      return 126;
    }
    fprintf(stderr, "%s: %s: command not found\n", cp_prog, program);
    return 127;
  }
  const char *b = cp_basename(path);
  if (!quiet && (!strcmp(b, "mpirun") || !strcmp(b, "mpiexec") || !strcmp(b, "orterun") ||
                 !strcmp(b, "prterun") || !strcmp(b, "srun")))
    fprintf(stderr, "%s: %s starts the ranks: put collprof after it, e.g. "
                    "'mpirun -np 4 collprof -o DIR -- ./app'\n", cp_prog, b);

  if (mpi < 0) {
    const char *m = getenv("COLLPROF_MPI");
    if (m && *m && strcasecmp(m, "auto") != 0) {
      if (!strcmp(m, "1") || !strcasecmp(m, "yes") || !strcasecmp(m, "on")) mpi = 1;
      else if (!strcmp(m, "0") || !strcasecmp(m, "no") || !strcasecmp(m, "off")) mpi = 0;
      else fprintf(stderr, "%s: COLLPROF_MPI='%s' is not 0, 1 or auto; detecting\n", cp_prog, m);
    }
  }
  if (mpi < 0) mpi = cp_mpi_env() || cp_elf_links_mpi(path) == 1;

  if (!collate) {
    const char *cv = getenv("COLLPROF_COLLATE");
    collate = cv && *cv && strcmp(cv, "0") != 0;
  }
  if (collate && mpi) {
    fprintf(stderr, "%s: --collate is for runs without MPI: the MPI layer collates at MPI_Finalize; "
                    "ignored\n", cp_prog);
    collate = 0;
  }
  const char *task = collate ? cp_one_of_several() : NULL;
  if (task) {
    fprintf(stderr, "%s: --collate: this is one task of several (%s): each would collate the folder while "
                    "the others still write; ignored (wrap the whole job: collprof --collate -o DIR -- "
                    "torchrun ...)\n", cp_prog, task);
    collate = 0;
  }
  if (collate && !(getenv("COLLPROF_OUTPUT_DIR") && *getenv("COLLPROF_OUTPUT_DIR"))) {
    fprintf(stderr, "%s: --collate needs the output folder: give -o DIR (every process of the job "
                    "writes there)\n", cp_prog);
    return 2;
  }

  /* The libraries. */
  char libdir[PATH_MAX], plugin[PATH_MAX + 32], mpilib[PATH_MAX + 32];
  if (cp_libdir(libdir, sizeof libdir) != 0) {
    fprintf(stderr, "%s: cannot find libcollprof.so in %s (set COLLPROF_LIBDIR)\n", cp_prog,
            getenv("COLLPROF_LIBDIR") && *getenv("COLLPROF_LIBDIR") ? getenv("COLLPROF_LIBDIR")
                                                                    : "<bindir>/../lib");
    return 1;
  }
  snprintf(plugin, sizeof plugin, "%s/libcollprof.so", libdir);
  snprintf(mpilib, sizeof mpilib, "%s/libcollprof-mpi.so", libdir);
  if (access(plugin, R_OK) != 0) {
    fprintf(stderr, "%s: cannot read %s: %s\n", cp_prog, plugin, strerror(errno));
    return 1;
  }
  if (mpi && access(mpilib, R_OK) != 0) {
    fprintf(stderr, "%s: %s missing: profiling without the MPI layer (no collation)\n",
            cp_prog, mpilib);
    mpi = 0;
  }
  const char *pre = mpi ? mpilib : plugin;
  if (strpbrk(pre, ": ")) /* ld.so splits LD_PRELOAD at both */
    fprintf(stderr, "%s: %s contains ':' or ' '; LD_PRELOAD cannot name it\n", cp_prog, pre);
  const char *old = getenv("LD_PRELOAD");
  char *preload_before = old ? strdup(old) : NULL;   /* for --collate's collprof-collate */
  if (!cp_in_list(old, pre)) {
    size_t n = strlen(pre) + (old ? strlen(old) : 0) + 2;
    char *lp = malloc(n);
    if (!lp) return 1;
    snprintf(lp, n, "%s%s%s", pre, old && *old ? ":" : "", old && *old ? old : "");
    cp_setenv("LD_PRELOAD", lp);
    free(lp);
  }
  const char *np = getenv("NCCL_PROFILER_PLUGIN");
  if (!quiet && np && *np && strcmp(np, plugin) != 0 && strcmp(np, "collprof") != 0 &&
      strcmp(cp_basename(np), "libcollprof.so") != 0 &&
      strcmp(cp_basename(np), "libnccl-profiler-collprof.so") != 0)
    fprintf(stderr, "%s: NCCL_PROFILER_PLUGIN=%s replaced by %s\n", cp_prog, np, plugin);
  cp_setenv("NCCL_PROFILER_PLUGIN", plugin);

  if (collate) return cp_run_then_collate(cp_prog, path, argv + optind, getenv("COLLPROF_OUTPUT_DIR"), preload_before,
                                         quiet);
  cp_exec_program(path, argv + optind);
  const int e = errno;
  fprintf(stderr, "%s: %s: %s\n", cp_prog, program, strerror(e));
  return e == ENOENT ? 127 : 126;
}
