/*
 * replay_main.c — collprof-replay's command line.
 *
 *   collprof-replay [--plugin LIB] [--api v5|v4] [--timed] [--rank-file-map]
 *                   [--mpi|--no-mpi] FILE...
 *   collprof-replay --synthetic NAME [--count N] [--threads T] [--expect FILE]
 *                   [--plugin LIB] [--api v5|v4] [--no-mpi]
 *
 * Replays NCCL profiler callbacks recorded in FILE (shared/fixtures format)
 * through a plugin loaded the way NCCL loads it, or generates a synthetic
 * stream.  With several files the first is replayed, unless under MPI: rank
 * r replays file r mod nfiles.  --rank-file-map prints which file each
 * process replays (and without MPI picks it by the launcher's rank variable,
 * OMPI_COMM_WORLD_RANK or PMIX_RANK, when one is set).  Ends with one line on
 * stderr: callbacks, events started, dropped by mask, threads, seconds, and
 * the stops NCCL makes on a stale CollApi/P2pApi handle (replay_engine.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "replay.h"
#include "replay_mpi.h"

static void usage(void) {
  fprintf(stderr,
    "usage: collprof-replay [--plugin LIB] [--api v5|v4] [--timed] [--rank-file-map]\n"
    "                       [--mpi|--no-mpi] FILE...\n"
    "       collprof-replay --synthetic reuse|graph|pxn|threads|badinput|fuzz [--count N]\n"
    "                       [--threads T] [--expect FILE] [--plugin LIB] [--api v5|v4]\n");
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int env_rank(void) {
  const char *s = getenv("OMPI_COMM_WORLD_RANK");
  if (!s) s = getenv("PMIX_RANK");
  return s ? atoi(s) : -1;
}

int main(int argc, char **argv) {
  const char *plugin = NULL, *synth = NULL, *expect = NULL;
  int force_api = 0, timed = 0, rank_map = 0, mpi = -1, threads = 0;
  long count = 0;
  char **files = calloc((size_t)argc, sizeof *files);
  int nfiles = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int more = i + 1 < argc;
    if (!strcmp(a, "--plugin") && more) plugin = argv[++i];
    else if (!strcmp(a, "--api") && more) {
      const char *v = argv[++i];
      force_api = !strcmp(v, "v5") || !strcmp(v, "5") ? 5 : !strcmp(v, "v4") || !strcmp(v, "4") ? 4 : -1;
      if (force_api < 0) { usage(); return 2; }
    }
    else if (!strcmp(a, "--timed")) timed = 1;
    else if (!strcmp(a, "--rank-file-map")) rank_map = 1;
    else if (!strcmp(a, "--mpi")) mpi = 1;
    else if (!strcmp(a, "--no-mpi")) mpi = 0;
    else if (!strcmp(a, "--synthetic") && more) synth = argv[++i];
    else if (!strcmp(a, "--count") && more) count = atol(argv[++i]);
    else if (!strcmp(a, "--threads") && more) threads = atoi(argv[++i]);
    else if (!strcmp(a, "--expect") && more) expect = argv[++i];
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(); return 0; }
    else if (a[0] == '-' && a[1]) { usage(); return 2; }
    else files[nfiles++] = argv[i];
  }
  if (!synth && !nfiles) { usage(); return 2; }
  /* The streams a capture recorded (another process's) and the synthetic
   * ones are no CUDA streams of this process.  The launch timer no longer
   * hands them to libcuda without a current context (which crashed on them
   * under the fuzz on an H200 host; src/launch_timer.c), but it would
   * count every launch skipped, so a replay's counters would differ
   * between hosts with and without a GPU.  Off unless asked for, as
   * test/launch_timer.t does with its stand-in libcuda. */
  setenv("COLLPROF_LAUNCH_SAMPLE", "0", 0);
  if (mpi < 0) mpi = rp_mpi_launched();
  int rank = -1, size = 0;
  if (mpi && rp_mpi_init(&argc, &argv, &rank, &size) != 0) {
    rp_log("MPI_Init failed");
    return 1;
  }
  rp_host_configure(plugin, force_api);
  double t0 = mono_s();
  int nthreads = -1, rc = 0;
  if (synth) {
    rp_synth_opts o = { synth, count, threads, expect };
    nthreads = rp_synth_run(&o);
    if (nthreads < 0) { rp_log("unknown synthetic stream \"%s\"", synth); rc = 2; }
  } else {
    int r = mpi ? rank : rank_map ? env_rank() : -1;
    int pick = r >= 0 ? r % nfiles : 0;
    if (rank_map) rp_log("rank %d replays %s", r, files[pick]);
    rp_capture c;
    if (rp_capture_read(files[pick], &c) != 0) rc = 1;
    else {
      int api = rp_host_probe_api();
      nthreads = rp_replay(&c, api, timed);
      if (nthreads < 0) rc = 1;
      rp_capture_free(&c);
    }
  }
  rp_log("callbacks %llu (start, stop, state: %llu), events started %llu, dropped by mask %llu, threads %d, "
         "seconds %.3f, stale API stops %llu",
         (unsigned long long)rp_host_callbacks(), (unsigned long long)rp_host_event_callbacks(),
         (unsigned long long)rp_host_events_started(),
         (unsigned long long)rp_dropped(), nthreads < 0 ? 0 : nthreads, mono_s() - t0,
         (unsigned long long)rp_stale_api_stops());
  if (mpi) rp_mpi_finalize();
  free(files);
  return rc;
}
