/*
 * gpu_app.h — collprof-gpu-app, the GPU test application (CUDA C, NCCL,
 * MPI): what its files share.
 *
 *   app_main.cu   command line, MPI + NCCL set-up, the phases (sweep,
 *                 split communicator, CUDA graph), one or two GPUs per
 *                 process (one thread each), the counts/results JSON
 *   app_ops.cu    one NCCL operation with nccl-tests' size conventions and
 *                 bus-bandwidth factors, and the per-(func, comm) counting
 *   app_ab.cu     the "ab" phase: collprof recording against collprof
 *                 paused, block by block in one process
 *
 * The app counts every NCCL call it makes so that test/gpu/run.sh can
 * check collprof's numbers exactly, and times each size of the sweep with
 * CUDA events so that test/gpu/overhead.sh can compare plugins.
 */
#ifndef COLLPROF_GPU_APP_H
#define COLLPROF_GPU_APP_H
#include <cuda_runtime.h>
#include <nccl.h>
#include <stddef.h>
#include <stdint.h>

enum { OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCESCATTER, OP_BROADCAST, OP_REDUCE, OP_ALLTOALL, NOPS };
enum { F_ALLREDUCE, F_ALLGATHER, F_REDUCESCATTER, F_BROADCAST, F_REDUCE, F_SEND, F_RECV, NFUNCS };
enum { MAXCOMMS = 2 };

extern const char *const app_op_name[NOPS];     /* "allreduce", ... (command line) */
extern const char *const app_func_name[NFUNCS]; /* NCCL's names: "AllReduce", ... */

/* What the app did with one func on one communicator (one GPU thread). */
typedef struct app_count {
  uint64_t api;          /* calls made (= CollApi/P2pApi events), captured ones included */
  uint64_t eager;        /* calls run directly (one Coll/P2p event each) */
  uint64_t eager_bytes;  /* Coll/P2p bytes of those: count x datatype size */
  uint64_t captured;     /* calls made while capturing a CUDA graph */
  uint64_t captured_bytes;
  uint64_t replayed;     /* captured calls run by graph launches */
  uint64_t replayed_bytes;
} app_count;

/* One communicator as one GPU thread sees it. */
typedef struct app_comm {
  ncclComm_t comm;
  const char *name;      /* also NCCL's commName: "world", "split" */
  int nranks, rank;
  cudaStream_t stream;
  void *sbuf, *rbuf;
  size_t cap;            /* bytes of each buffer */
  app_count count[NFUNCS];
  int capturing;         /* calls go to count.captured */
} app_comm;

/* Issue one operation of nccl-tests size `bytes` (AllGather: total output;
 * ReduceScatter: total input; AllToAll: total per rank) on ac's stream, and
 * count it.  Returns the size actually used (rounded to whole floats per
 * rank, at least one).  Aborts the job on an NCCL error. */
size_t app_op(app_comm *ac, int op, size_t bytes);

/* nccl-tests' bus-bandwidth factor of op on n ranks. */
double app_busbw_factor(int op, int n);

/* Count the calls a graph launch runs: every call captured on ac. */
void app_count_replay(app_comm *ac);

/* The "ab" phase (app_ab.cu): for each op of ops and size min..max (x
 * factor), warmup calls, then `rounds` rounds of a block of `calls` calls
 * with collprof recording and one with it paused, in alternating order;
 * NCCL rank 0 writes out/ab.json. */
typedef struct app_ab_opt {
  size_t min, max;
  double factor;
  int calls, warmup, rounds;
  const int *ops;        /* NOPS flags */
  const char *out;
} app_ab_opt;
void app_phase_ab(app_comm *w, int nccl_rank, const app_ab_opt *o);

void app_die(const char *what, const char *detail);
#define NCCLCHECK(x) do { ncclResult_t r_ = (x); if (r_ != ncclSuccess) app_die(#x, ncclGetErrorString(r_)); } while (0)
#define CUDACHECK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) app_die(#x, cudaGetErrorString(e_)); } while (0)

#endif
