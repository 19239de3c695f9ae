/*
 * app_ops.cu — one NCCL operation of collprof-gpu-app (gpu_app.h) with
 * nccl-tests' conventions, and the counting that run.sh checks collprof
 * against.
 *
 * Bytes counted per Coll/P2p event are what NCCL puts in the profiler
 * descriptor: count x datatype size, with count the per-rank count NCCL
 * gets (AllGather: sendcount; ReduceScatter: recvcount; Send/Recv: count).
 */
#include "gpu_app.h"
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

const char *const app_op_name[NOPS] = {"allreduce", "allgather", "reducescatter",
                                       "broadcast", "reduce", "alltoall"};
const char *const app_func_name[NFUNCS] = {"AllReduce", "AllGather", "ReduceScatter",
                                           "Broadcast", "Reduce", "Send", "Recv"};

void app_die(const char *what, const char *detail) {
  fprintf(stderr, "collprof-gpu-app: %s: %s\n", what, detail);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

static void count(app_comm *ac, int f, uint64_t bytes) {
  app_count *c = &ac->count[f];
  c->api++;
  if (ac->capturing) { c->captured++; c->captured_bytes += bytes; }
  else { c->eager++; c->eager_bytes += bytes; }
}

void app_count_replay(app_comm *ac) {
  for (int f = 0; f < NFUNCS; f++) {
    ac->count[f].replayed += ac->count[f].captured;
    ac->count[f].replayed_bytes += ac->count[f].captured_bytes;
  }
}

double app_busbw_factor(int op, int n) {
  switch (op) {
    case OP_ALLREDUCE: return 2.0 * (n - 1) / n;
    case OP_ALLGATHER: case OP_REDUCESCATTER: case OP_ALLTOALL: return (double)(n - 1) / n;
    default: return 1.0;
  }
}

size_t app_op(app_comm *ac, int op, size_t bytes) {
  const size_t fl = sizeof(float);
  int n = ac->nranks;
  size_t per = bytes / fl;                       /* floats in the whole size */
  float *s = (float *)ac->sbuf, *r = (float *)ac->rbuf;
  cudaStream_t st = ac->stream;
  switch (op) {
    case OP_ALLREDUCE: {
      size_t c = per ? per : 1;
      NCCLCHECK(ncclAllReduce(s, r, c, ncclFloat, ncclSum, ac->comm, st));
      count(ac, F_ALLREDUCE, c * fl);
      return c * fl;
    }
    case OP_ALLGATHER: {
      size_t c = per / n ? per / n : 1;
      NCCLCHECK(ncclAllGather(s, r, c, ncclFloat, ac->comm, st));
      count(ac, F_ALLGATHER, c * fl);
      return c * fl * n;
    }
    case OP_REDUCESCATTER: {
      size_t c = per / n ? per / n : 1;
      NCCLCHECK(ncclReduceScatter(s, r, c, ncclFloat, ncclSum, ac->comm, st));
      count(ac, F_REDUCESCATTER, c * fl);
      return c * fl * n;
    }
    case OP_BROADCAST: {
      size_t c = per ? per : 1;
      NCCLCHECK(ncclBroadcast(s, r, c, ncclFloat, 0, ac->comm, st));
      count(ac, F_BROADCAST, c * fl);
      return c * fl;
    }
    case OP_REDUCE: {
      size_t c = per ? per : 1;
      NCCLCHECK(ncclReduce(s, r, c, ncclFloat, ncclSum, 0, ac->comm, st));
      count(ac, F_REDUCE, c * fl);
      return c * fl;
    }
    case OP_ALLTOALL: {
      /* grouped Send/Recv with every other rank (no self copy: NCCL need
       * not send a P2p event for it) */
      size_t c = per / n ? per / n : 1;
      NCCLCHECK(ncclGroupStart());
      for (int p = 0; p < n; p++) {
        if (p == ac->rank) continue;
        NCCLCHECK(ncclSend(s + (size_t)p * c, c, ncclFloat, p, ac->comm, st));
        count(ac, F_SEND, c * fl);
        NCCLCHECK(ncclRecv(r + (size_t)p * c, c, ncclFloat, p, ac->comm, st));
        count(ac, F_RECV, c * fl);
      }
      NCCLCHECK(ncclGroupEnd());
      return c * fl * n;
    }
  }
  return 0;
}
