/*
 * affinity.c — one start-up check of the CPUs this process may run on.
 *
 * NCCL runs a proxy thread per communicator (and collprof a trace writer)
 * beside the application's threads.  Bound to a single CPU — what
 * `mpirun` does by default for 2 ranks or fewer (Open MPI 4: --bind-to
 * core) — they all take turns on it in scheduler time slices: NCCL's proxy
 * reads the kernels' KernelCh timestamps milliseconds to hundreds of
 * milliseconds late (seen on H200), so collprof must drop most GPU samples
 * (NCCL's timestamp slots are reused meanwhile: parent_link.h) and defer the
 * rest (sample_in_flight.c), and NCCL itself slows down.  The user can only
 * fix that in the launch line.  The affinity is read once at the first
 * init (a system call, never on the event path); the advice is printed once,
 * only when it matters: at the first GPU sample skipped or dropped (a CPU
 * replay bound to one core has no proxy thread to starve).
 *
 * With several CPUs, NCCL's proxy thread can still fall behind: with
 * KernelCh on every call (COLLPROF_GPU_SAMPLE=1) it makes three callbacks
 * per channel and call, and on 2 H200s it fell more than 32 calls behind
 * the GPU in every run of an 8 B-4 MiB all-reduce sweep (640-2,765 spans
 * dropped per rank: parent_link.h, CP_KC_SLOT_TRUST).  NCCL's own speed then
 * depends on that thread: from some point of a run on, 256 KiB-2 MiB
 * all-reduces may turn 3-4x slower, in 10 of 45 runs under a do-nothing
 * plugin, 37 of 75 under collprof and 9 of 10 with 100 ns more per KernelCh
 * (test/gpu/overhead.sh; "runs that turned slow" in overhead_report.py).
 * So the first drop tells the user once what it means and what avoids
 * both: KernelCh on one call in N.
 */
#include <sched.h>
#include <stdatomic.h>
#include "affinity.h"
#include "config.h"

static atomic_int g_one_cpu, g_said, g_said_behind;

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

void cp_affinity_kc_behind(unsigned calls) {
  if (atomic_load_explicit(&g_one_cpu, memory_order_relaxed)) { cp_affinity_gpu_lag(); return; }
  if (cp_config_get()->gpu_sample != 1) return;   /* N >= 2: sample_in_flight.c keeps the proxy from falling behind */
  if (atomic_load_explicit(&g_said_behind, memory_order_relaxed) || atomic_exchange(&g_said_behind, 1)) return;
  cp_warn("NCCL's proxy thread fell more than %u calls behind the GPU with KernelCh on every call "
          "(COLLPROF_GPU_SAMPLE=1): those calls' GPU times are dropped (gpuSamplesDropped); NCCL's own "
          "speed then depends on that thread (on 2 H200s, 256 KiB-2 MiB all-reduces ran 3-4x slower in "
          "about a fifth of the runs even under a do-nothing plugin); KernelCh on one call in N "
          "(COLLPROF_GPU_SAMPLE=16, the default) avoids both",
          calls);
}
