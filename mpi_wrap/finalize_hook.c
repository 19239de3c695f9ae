/*
 * finalize_hook.c — the collation at MPI_Finalize, before PMPI_Finalize
 * (mpi_layer.h):
 *   1. the plugin writes this rank's own data (trace flushed, path and rank
 *      records with local ids): nothing measured depends on what follows;
 *   2. a snapshot of the profile becomes this rank's cp_rank_data and is
 *      merged over the binomial tree (tree_collate.c); rank 0 gets the
 *      summary, every rank its global ids;
 *   3. the plugin rewrites its path records with the global ids;
 *   4. rank 0 writes summary.log and summary.json (collate/ writers, the
 *      same as collprof-collate) and prints where they are; ranks chosen by
 *      COLLPROF_RANK_LOGS write rank<R>.log in the same ID space.
 */
#include "mpi_layer.h"
#include "tree_collate.h"
#include "snapshot.h"
#include "report.h"
#include "collprof.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* argv joined by spaces, as the plugin writes it in the rank record */
static void read_command(char *buf, size_t cap) {
  size_t n = 0;
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t r;
    while (n < cap - 1 && (r = read(fd, buf + n, cap - 1 - n)) > 0) n += (size_t)r;
    close(fd);
  }
  while (n && buf[n - 1] == 0) n--;
  for (size_t i = 0; i < n; i++) if (!buf[i]) buf[i] = ' ';
  buf[n] = 0;
}

void cp_mpi_before_finalize(void) {
  static int done;
  if (done) return;
  done = 1;
  if (!cp_mpi_usable()) return;
  int rank = 0, size = 1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  collprof_set_mpi_managed(1);
  if (collprof_write_local() != 0)
    fprintf(stderr, "collprof: rank %d: writing its own data failed; collating anyway\n", rank);

  static char cmd[8192];
  read_command(cmd, sizeof cmd);
  cp_rank_data mine;
  collprof_snapshot snap;
  memset(&snap, 0, sizeof snap);
  int have = collprof_snapshot_take(&snap) == 0;
  if (!have || cp_rank_from_snapshot(&snap, cmd, &mine) != 0) {
    fprintf(stderr, "collprof: rank %d: no profile snapshot; it takes part with no paths\n", rank);
    memset(&mine, 0, sizeof mine);
  }
  if (have) collprof_snapshot_free(&snap);
  mine.rank = rank;
  mine.world_size = size;
  int cv = 0;
  cp_clock_result(&cv, &mine.clock_offset_ns, &mine.clock_rtt_ns);
  mine.has_clock = cv;

  MPI_Comm comm;
  if (PMPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS) { cp_rank_data_free(&mine); return; }
  int64_t *gids = calloc(mine.npaths + 1, sizeof *gids);
  cp_summary sum;
  memset(&sum, 0, sizeof sum);
  cp_tree_info info;
  int64_t *none = gids ? gids : (int64_t[1]){0};
  cp_rank_data empty;
  memset(&empty, 0, sizeof empty);
  empty.rank = rank;
  /* without memory for the ids, take part with no paths rather than hang others */
  cp_tree_collate(comm, gids ? &mine : &empty, cp_hash_bits_env(), none,
                  rank == 0 ? &sum : NULL, &info);
  PMPI_Comm_free(&comm);

  /* global ids by local id for the plugin's path records */
  uint32_t maxl = 0;
  for (size_t i = 0; i < mine.npaths; i++) if (mine.paths[i].local + 1 > maxl) maxl = mine.paths[i].local + 1;
  int64_t *by_local = malloc((maxl + 1) * sizeof *by_local);
  if (by_local && gids) {
    for (uint32_t i = 0; i < maxl; i++) by_local[i] = -1;
    for (size_t i = 0; i < mine.npaths; i++) {
      mine.paths[i].id = gids[i];
      by_local[mine.paths[i].local] = gids[i];
    }
    if (collprof_write_global(by_local, maxl) != 0)
      fprintf(stderr, "collprof: rank %d: rewriting path records with global ids failed\n", rank);
  }
  free(by_local);

  const char *dir = collprof_output_dir();
  const char *q = getenv("COLLPROF_QUIET");
  if (rank == 0) {
    snprintf(sum.outdir, sizeof sum.outdir, "%s", dir);
    if (cp_write_summaries(&sum, dir) == 0 && !(q && *q && strcmp(q, "0")))
      fprintf(stderr, "collprof: summary of %d ranks in %s/summary.log\n", size, dir);
    cp_summary_free(&sum);
  }
  const char *logs = getenv("COLLPROF_RANK_LOGS");
  if (gids && cp_rank_log_wanted(logs, rank)) {
    char p[8192];
    snprintf(p, sizeof p, "%s/rank%d.log", dir, rank);
    cp_write_rank_log(&mine, p);
  }
  free(gids);
  cp_rank_data_free(&mine);
}
