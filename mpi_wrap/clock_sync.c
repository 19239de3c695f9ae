/*
 * clock_sync.c — each rank's clock offset to rank 0 (mpi_layer.h), with
 * the plugin's clock (collprof_now_ns, which carries the tests' injected
 * skew).  Ping-pong along the binomial tree, top down: a rank first
 * learns its own offset from its parent, then serves its children, so
 * there are ceil(log2 P) rounds and no loop over ranks on rank 0.  Per
 * edge, several round trips; the one with the smallest round trip is kept
 * (offset = parent time - midpoint of our send and receive); offsets add
 * up along the path to rank 0.
 */
#include "mpi_layer.h"
#include "collprof.h"

#define TAG_PING 0x4360
#define TAG_PONG 0x4361
#define TAG_OFF  0x4362
#define TRIPS 8

void cp_clock_sync(MPI_Comm comm, int64_t *offset_ns, int64_t *rtt_ns) {
  int rank, P;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &P);
  int R = 0;
  while ((1 << R) < P) R++;
  int64_t off = 0, rtt = 0;
  for (int k = R - 1; k >= 0; k--) {
    int mask = 1 << k;
    if (rank % (2 * mask) == mask) {            /* our parent is rank - mask */
      int parent = rank - mask;
      int64_t best_rtt = INT64_MAX, best_off = 0;
      for (int i = 0; i < TRIPS; i++) {
        int64_t t0 = (int64_t)collprof_now_ns(), tp = 0;
        PMPI_Send(&t0, 1, MPI_INT64_T, parent, TAG_PING, comm);
        PMPI_Recv(&tp, 1, MPI_INT64_T, parent, TAG_PONG, comm, MPI_STATUS_IGNORE);
        int64_t t1 = (int64_t)collprof_now_ns();
        if (t1 - t0 < best_rtt) { best_rtt = t1 - t0; best_off = tp - (t0 + (t1 - t0) / 2); }
      }
      int64_t parent_off = 0;
      PMPI_Recv(&parent_off, 1, MPI_INT64_T, parent, TAG_OFF, comm, MPI_STATUS_IGNORE);
      off = best_off + parent_off;
      rtt = best_rtt;
    } else if (rank % (2 * mask) == 0 && rank + mask < P) {   /* serve our child */
      int child = rank + mask;
      for (int i = 0; i < TRIPS; i++) {
        int64_t t = 0;
        PMPI_Recv(&t, 1, MPI_INT64_T, child, TAG_PING, comm, MPI_STATUS_IGNORE);
        t = (int64_t)collprof_now_ns();
        PMPI_Send(&t, 1, MPI_INT64_T, child, TAG_PONG, comm);
      }
      PMPI_Send(&off, 1, MPI_INT64_T, child, TAG_OFF, comm);
    }
  }
  *offset_ns = off;
  *rtt_ns = rtt;
}
