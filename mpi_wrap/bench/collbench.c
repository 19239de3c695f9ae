/*
 * collbench.c — collation benchmark (figures, not a test): P ranks, each
 * with M synthetic call paths (half shared by every rank, half unique to
 * it), fed into the same collation code libcollprof-mpi.so runs at
 * MPI_Finalize (mpi_wrap/tree_collate.c + collate/).  Prints the rounds,
 * the wall time of the collation (from a barrier; rank 0 and the slowest
 * rank), the CPU time summed over ranks, and the largest memory growth of
 * any rank (peak RSS during collation minus RSS before).
 *
 *   make collbench
 *   mpirun --oversubscribe -np 64 build/bin/collprof-collbench [-m 2000] [-w DIR]
 *
 * -w DIR also writes summary.log/summary.json into DIR (timed apart);
 * -n: rank 0 does not build the report table (cp_summary): the figures of
 * the merge, ids and combined numbers alone.
 * Anchor (issue 3): Vftrace 2.0, 64 ranks x 2,000 stacks: 0.58 s, 1.56 CPU-s,
 * rank 0 +34 MiB.  Goal: < 0.2 s, < 0.3 CPU-s, no rank > 16 MiB.
 */
#include "tree_collate.h"
#include "report.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <xxhash.h>

static long rss_kib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, res = 0;
  if (f) { if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0; fclose(f); }
  return res * (sysconf(_SC_PAGESIZE) / 1024);
}

static double cpu_s(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static long peak_kib(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, P;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &P);
  int M = 2000;
  const char *wdir = NULL;
  int no_summary = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-n")) no_summary = 1;
    if (!strcmp(argv[i], "-m") && i + 1 < argc) M = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-w") && i + 1 < argc) wdir = argv[++i];
  }
  /* synthetic rank data, paths shaped like real ones */
  cp_rank_data r;
  memset(&r, 0, sizeof r);
  r.rank = rank; r.world_size = P; r.pid = getpid();
  gethostname(r.host, sizeof r.host);
  r.command = strdup("collprof-collbench");
  r.start_ns = 1; r.end_ns = 1000000000;
  r.events_recorded = (uint64_t)M * 100; r.per_event_cost_ns = 50;
  r.npaths = (size_t)M;
  r.paths = calloc((size_t)M, sizeof *r.paths);
  static const char *fn[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast"};
  for (int i = 0; i < M; i++) {
    cp_path_rec *p = &r.paths[i];
    char s[256];
    int shared = i < M / 2;
    snprintf(s, sizeof s, "GroupApi/CollApi:%s/Coll:%s/ProxyOp:Send/ProxyStep#%s%d_%d", fn[i % 4], fn[i % 4],
             shared ? "s" : "u", shared ? 0 : rank, i);
    p->id = -1; p->local = (uint32_t)i;
    p->path = strdup(s); p->leaf_func = strdup(fn[i % 4]);
    p->hash = XXH3_64bits(s, strlen(s));
    p->leaf_type = 16;
    p->calls = 100 + (uint64_t)rank; p->total_ns = 1000000 + (uint64_t)rank * 1000 + (uint64_t)i;
    p->self_ns = p->total_ns / 2; p->min_ns = 100; p->max_ns = 100000; p->bytes = 0;
  }
  int64_t *gids = malloc((size_t)M * sizeof *gids);
  long rss0 = rss_kib();
  double c0 = cpu_s();
  cp_summary sum;
  memset(&sum, 0, sizeof sum);
  cp_tree_info info;
  cp_tree_collate(MPI_COMM_WORLD, &r, 64, gids, rank == 0 && !no_summary ? &sum : NULL, &info);
  double c1 = cpu_s();
  long grow = peak_kib() - rss0;
  double cpu = c1 - c0, cpu_sum = 0;
  long grow_max = 0;
  MPI_Reduce(&cpu, &cpu_sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(&grow, &grow_max, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
  double wall_max = 0;
  unsigned long long recv = info.bytes_recv, recv_max = 0;
  MPI_Reduce(&info.wall_s, &wall_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  MPI_Reduce(&recv, &recv_max, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
  /* check: shared paths got the same id everywhere (rank 0's = everyone's) */
  int64_t g0 = gids[0], gmin = 0, gmax = 0;
  MPI_Reduce(&g0, &gmin, 1, MPI_INT64_T, MPI_MIN, 0, MPI_COMM_WORLD);
  MPI_Reduce(&g0, &gmax, 1, MPI_INT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    double tw = 0;
    if (wdir) {
      double w0 = MPI_Wtime();
      cp_write_summaries(&sum, wdir);
      tw = MPI_Wtime() - w0;
    }
    printf("collbench: ranks %d, paths/rank %d (half shared), global paths %zu (expected %zu)%s\n", P, M,
           sum.npaths, (size_t)(M / 2) + (size_t)P * (size_t)(M - M / 2),
           no_summary ? " [-n: no report table]" : "");
    printf("collbench: rounds %d, wall rank0 %.4f s, wall slowest %.4f s, CPU all ranks %.4f s\n",
           info.rounds, info.wall_s, wall_max, cpu_sum);
    printf("collbench: largest memory growth %.2f MiB, largest receive %llu bytes, global set %llu bytes\n",
           grow_max / 1024.0, recv_max, (unsigned long long)sum.coll.global_set_bytes);
    printf("collbench: shared path id consistent: %s\n", gmin == gmax ? "yes" : "NO");
    if (wdir) printf("collbench: writing summary.log + summary.json: %.4f s\n", tw);
    cp_summary_free(&sum);
  }
  cp_rank_data_free(&r);
  free(gids);
  MPI_Finalize();
  return 0;
}
