/*
 * affinity.c — one start-up check of the CPUs this process may run on.
 *
 * NCCL runs a proxy thread per communicator (and collprof a trace writer)
 * beside the application's threads.  Bound to a single CPU — what
 * `mpirun` does by default for 2 ranks or fewer (Open MPI 4: --bind-to
 * core) — they all take turns on it in scheduler time slices: NCCL's proxy
 * reads the kernels' KernelCh timestamps milliseconds to hundreds of
 * milliseconds late (seen on H200), so collprof must drop most GPU samples
 * (NCCL's timestamp slots are reused meanwhile: plugin.c) and defer the
 * rest (mask_control.c), and NCCL itself slows down.  The user can only
 * fix that in the launch line.  The affinity is read once at the first
 * init (a system call, never on the event path); the advice is printed once,
 * only when it matters: at the first GPU sample skipped or dropped (a CPU
 * replay bound to one core has no proxy thread to starve).
 */
#include <sched.h>
#include <stdatomic.h>
#include "affinity.h"
#include "config.h"

static atomic_int g_one_cpu, g_said;

void cp_affinity_probe(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;   /* unknown: say nothing */
  atomic_store(&g_one_cpu, CPU_COUNT(&set) == 1);
}

void cp_affinity_gpu_lag(void) {
  if (!atomic_load_explicit(&g_one_cpu, memory_order_relaxed)) return;
  if (atomic_load_explicit(&g_said, memory_order_relaxed) || atomic_exchange(&g_said, 1)) return;
  cp_warn("this process may run on 1 CPU only (CPU affinity): NCCL's proxy thread and collprof's "
          "trace writer share it with the application, which slows NCCL and makes KernelCh "
          "timestamps arrive late (GPU samples are then skipped or dropped); give each rank "
          "several cores, e.g. mpirun --bind-to none or --map-by slot:PE=4");
}
