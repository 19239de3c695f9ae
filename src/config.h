/*
 * config.h — the plugin's configuration, read once from the environment.
 *
 * Owned by config.c.  Every malformed value gives one "collprof:" warning
 * naming the variable and falls back to the default; nothing here aborts.
 * cp_config_load() is idempotent and thread-safe (first caller wins).
 */
#ifndef COLLPROF_CONFIG_H
#define COLLPROF_CONFIG_H
#include <stdint.h>

typedef struct cp_config {
  uint32_t event_mask;      /* NCCL_PROFILE_EVENT_MASK; default 4095 & ~KernelCh */
  int mask_from_env;        /* 1 when NCCL_PROFILE_EVENT_MASK was set */
  int gpu_sample;           /* COLLPROF_GPU_SAMPLE: KernelCh on 1 API call in N
                               (0 never).  Default 16 when the mask is the
                               default, 1 when the user's mask has KernelCh */
  int launch_sample;        /* COLLPROF_LAUNCH_SAMPLE: CUDA events around the kernel
                               launch of 1 API call in N per thread (0 never;
                               default 64): launch_timer.h */
  uint32_t launch_interval_us; /* COLLPROF_LAUNCH_INTERVAL_US: the least mean time
                               between two timed launches of one thread
                               (0: one in N only; default 5000) */
  uint32_t launch_run;      /* COLLPROF_LAUNCH_RUN: consecutive launches timed as
                               one run, one event pair around them (default 8;
                               launch_timer.h, "Runs") */
  uint32_t launch_run_gap_us; /* COLLPROF_LAUNCH_RUN_GAP_US: the longest host gap
                               between two calls of a run (default 2) */
  uint64_t launch_min_bytes; /* COLLPROF_LAUNCH_MIN_BYTES: only launches of calls
                               this large are timed (default 64 KiB, 0 = any
                               size): launch_timer.h, "Small calls" */
  int host_sample;          /* COLLPROF_HOST_SAMPLE: time and trace 1 API call in N
                               per thread, count every call (0: only the calls
                               GPU sampling or a new path asks for; default 1:
                               every call; CP_HOST_SAMPLE_AUTO: N from the call
                               rate, host_sample.h): call_modes.h, "Host sampling" */
  uint64_t sample_seed;     /* COLLPROF_SAMPLE_SEED: the sampling draws' seed
                               (tls.h, cp_thr_seed) when sample_seed_set */
  int sample_seed_set;
  uint32_t host_sample_us;  /* COLLPROF_HOST_SAMPLE_US: auto's least spacing of a
                               thread's timed calls (default 1000) */
  uint32_t cost_sample_ms;  /* COLLPROF_COST_SAMPLE_MS: mean time between two windows
                               in which collprof times its own callbacks
                               (cost_sample.c; default 100, 0: never) */
  uint32_t cost_window_us;  /* COLLPROF_COST_WINDOW_US: such a window's length
                               (default 1000; >= 1000 x the above: always) */
  char periods[128];        /* COLLPROF_PERIODS delay:duration[:repeat], "" none */
  uint32_t gpu_sample_us;   /* COLLPROF_GPU_SAMPLE_US (default 0: exactly one
                               call in N): a thread's KernelCh samples at least
                               this far apart on average, N growing to 4 N for
                               faster calls (gpu_sample_rule.c, "Spacing") */
  uint32_t gpu_sample_small; /* COLLPROF_GPU_SAMPLE_SMALL (default 16, 1..1024): an
                               API call of fewer than gpu_sample_small_bytes
                               is sampled one in N x this (gpu_sample_rule.c,
                               "Small calls") */
  uint64_t gpu_sample_small_bytes; /* COLLPROF_GPU_SAMPLE_SMALL_BYTES (default
                               1 MiB, rounded up to a power of two; 0: no call
                               is small) */
  uint32_t gpu_sample_delay_ms; /* COLLPROF_GPU_SAMPLE_DELAY_MS (default 100): no
                               KernelCh sample until this long after the first
                               call's group start (start_delay.c, "Start delay") */
  int gpu_sample_delay_auto; /* the delay is the default (unset, "auto", or a
                               bad value): none for a process with one rank of
                               each communicator at its first call (start_delay.c) */
  int lean;                 /* COLLPROF_LEAN (default 1): a call that is only
                               counted asks NCCL for its API events alone
                               (mask_control.c, "Lean calls") */
  int start_paused;         /* COLLPROF_START_PAUSED (default 0): recording off
                               until the application calls collprof_resume() */
  int trace_on;             /* COLLPROF_TRACE (default 1) */
  int capture;              /* COLLPROF_CAPTURE (default 0): write fixtures */
  int proxy_defer;          /* COLLPROF_PROXY_DEFER (default 0): NCCL's proxy-thread
                               callbacks recorded and applied off that thread
                               (proxy_defer.h) */
  int quiet;                /* COLLPROF_QUIET (default 0): only warnings */
  uint32_t pool_size;       /* COLLPROF_POOL_SIZE slots per chunk (default 1024) */
  uint64_t blacklist_cap;   /* COLLPROF_BLACKLIST_CAP (default 10,000,000) */
  uint32_t trace_buffer;    /* COLLPROF_TRACE_BUFFER records per thread ring (default 16384) */
  int trace_nice;           /* COLLPROF_TRACE_NICE 0..19 (default 10): the trace
                               writer thread's nice value (trace_writer.c) */
  char output_dir[4096];    /* COLLPROF_OUTPUT_DIR, else collprof-<SLURM_JOB_ID>,
                               else collprof-<YYYYMMDD-HHMMSS> */
  int output_dir_from_env;
} cp_config;

/* The configuration, loading it on first use. Never NULL. */
const cp_config *cp_config_get(void);

/* Re-read the environment (tests only). */
void cp_config_reload(void);

/* One "collprof: ..." line on stderr (printf format); rate-limited per
 * call site by the caller. Async-signal-unsafe: not for handlers. */
void cp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Informational line, suppressed by COLLPROF_QUIET. */
void cp_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
