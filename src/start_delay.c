/*
 * start_delay.c — no KernelCh in a process's first D ms, where more
 * calling threads may start: its clock, its end, and the default rule
 * that skips it (the communicators' commIds and the threads that inited
 * them, noted at each init).
 *
 * Start delay (COLLPROF_GPU_SAMPLE_DELAY_MS = D, default 100; 0 = none):
 * with N >= 2, KernelCh stays off (no periodic, forced, first-call or
 * window sample) until the first thread's first outermost group stop D
 * ms after its first group start; until then every decision is "off"
 * (attach included) and no path is marked
 * as forced, so each path seen meanwhile forces its sample at its first
 * call after.  Why: a second calling thread freezes the mask as it finds
 * it (mask_control.c, "Freeze"), and programs that run NCCL on several
 * threads (nccl-tests -t, one thread per GPU) start them together, 3.4 ms
 * apart in the ar4_threads capture.  Without the delay that thread found KernelCh on
 * nearly always (the first call is a sample, and each new path forces
 * one), so the whole run then had KernelCh on every call, the cost that
 * sampling exists to avoid (up to 4x for 128 KiB-2 MiB all-reduces on 2
 * H200s); with it such a process freezes with KernelCh off and keeps its
 * launch samples' GPU times (launch_timer.h).  Measured from the first
 * thread's first group start: threads whose ranks share a communicator
 * start their first calls before that first call can end (it sets up the
 * connections, with them), and others that start within D are covered.
 * The price for one thread: no KernelCh sample in its first D ms, and a
 * sweep whose small sizes pass in them has none there (their GPU time is
 * then borrowed from larger sizes: 1.4-2.9 times the exact time on a
 * 2-H200 network sweep).  So the default (auto: the variable unset, "auto"
 * or bad) runs no delay for a process that holds one rank of each of its
 * communicators at its first group start (inits with distinct commIds:
 * one GPU per process, however many communicators): NCCL ends every
 * communicator's init with a barrier of its ranks on the node
 * (bootstrapIntraNodeBarrier, after the plugin's init), so a process whose
 * threads each drive a rank of one communicator (nccl-tests -t, the
 * ar4_threads capture) has had an init per rank, two of one commId, by
 * then, and one thread driving several GPUs too.  And every thread that
 * ran an init must have exited by the first call or be the one making
 * it: a thread of the program that inited and still lives may call too
 * (threads that each init a communicator of their own, distinct commIds,
 * and call on theirs; or a program that inits on its main thread and
 * calls from a worker), while NCCL runs a group of several inits and a
 * non-blocking init on threads of its own, gone by the first call (a
 * group of one runs on the calling thread).  Left to the delay: a second
 * thread calling, later, on a communicator the first calling thread
 * inited; a freeze then may find KernelCh on (costly for that process,
 * not a hang: the stderr line says so), and an explicit
 * COLLPROF_GPU_SAMPLE_DELAY_MS keeps the delay whatever the communicators.
 */
#include "mask_state.h"
#include "config.h"
#include "clock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>
#pragma GCC visibility push(hidden)

static uint64_t g_delay_ns;           /* D in ns */
static uint64_t g_delay_end;          /* when it ends (cp_clock_now): set at the first group start */
static int g_delay_auto;              /* the default rule (above): none with one rank per communicator */
static atomic_int g_delay_skipped;    /* ...and it found one: no delay ran */
static atomic_uint g_attached;        /* communicator inits seen (cp_mask_attach) */
#define DELAY_IDS 64                  /* commIds kept for the auto rule; more: the delay runs */
static pthread_mutex_t g_ids_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t g_ids[DELAY_IDS];
static atomic_uint g_nids;            /* distinct commIds seen (cp_mask_comm_id) */
static atomic_int g_ids_shared;       /* one repeated (two ranks of a communicator), 0, too
                                         many, or init threads that cannot be told apart */
/* The threads that ran inits (under g_ids_mu), each alive until its exit
 * (init_thread_exit, through a key whose value is the slot + 1): NCCL runs
 * the inits of a group of several (ncclCommInitAll, inits between
 * GroupStart and GroupEnd) and a non-blocking one on threads of its own,
 * which have exited by the first call; the program's threads have not.
 * More than INIT_TIDS of them: the delay runs. */
#define INIT_TIDS 8
static int g_init_tid[INIT_TIDS];
static atomic_int g_init_alive[INIT_TIDS];
static unsigned g_ninit_tids;
static pthread_key_t g_ids_key;
static pthread_once_t g_ids_key_once = PTHREAD_ONCE_INIT;
static atomic_int g_ids_key_ok;
static void init_thread_exit(void *p) {
  const uintptr_t i = (uintptr_t)p;
  if (i >= 1 && i <= INIT_TIDS) atomic_store(&g_init_alive[i - 1], 0);
}
static void ids_key_create(void) {
  atomic_store(&g_ids_key_ok, pthread_key_create(&g_ids_key, init_thread_exit) == 0);
}

void cp_mask_comm_id(uint64_t comm_id) {
  const pid_t tid = (pid_t)syscall(SYS_gettid);   /* init only: a system call is fine here */
  pthread_mutex_lock(&g_ids_mu);   /* init only: rare, and may run on several threads */
  unsigned n = atomic_load(&g_nids), i = 0;
  while (i < n && g_ids[i] != comm_id) i++;
  if (comm_id == 0 || i < n || n == DELAY_IDS) atomic_store(&g_ids_shared, 1);
  else g_ids[n] = comm_id, atomic_store(&g_nids, n + 1);
  /* this thread among the init threads (above), alive from now on; the
   * library is never unmapped (plugin.c pin_library), so the destructor
   * can run whenever the thread ends */
  unsigned k = 0;
  while (k < g_ninit_tids && g_init_tid[k] != (int)tid) k++;
  /* a known tid not alive: an exited thread's id, taken by a new thread */
  if (k == g_ninit_tids || !atomic_load(&g_init_alive[k])) {
    pthread_once(&g_ids_key_once, ids_key_create);
    if (k == INIT_TIDS || !atomic_load(&g_ids_key_ok) ||
        pthread_setspecific(g_ids_key, (void *)(uintptr_t)(k + 1)) != 0) {
      atomic_store(&g_ids_shared, 1);   /* cannot tell: the delay runs */
    } else {
      g_init_tid[k] = (int)tid;
      atomic_store(&g_init_alive[k], 1);
      if (k == g_ninit_tids) g_ninit_tids = k + 1;
    }
  }
  pthread_mutex_unlock(&g_ids_mu);
}

uint32_t cp_mask_start_delay_ms(void) {
  cp_mask_init();
  return atomic_load(&g_delay_skipped) ? 0 : (uint32_t)(g_delay_ns / 1000000u);
}

/* Every thread that ran an init has exited or is `tid` (the first call's):
 * no thread of the program but this one has been seen (above). */
static int init_threads_gone_but(int tid) {
  pthread_mutex_lock(&g_ids_mu);   /* once, at the first group start */
  int ok = 1;
  for (unsigned k = 0; k < g_ninit_tids; k++)
    if (g_init_tid[k] != tid && atomic_load(&g_init_alive[k])) ok = 0;
  pthread_mutex_unlock(&g_ids_mu);
  return ok;
}

void cp_mask_delay_setup(const cp_config *c) {
  g_delay_ns = (uint64_t)c->gpu_sample_delay_ms * 1000000u;
  g_delay_auto = c->gpu_sample_delay_auto;
  if (cp_mk.n >= 2 && g_delay_ns) {   /* no sample until it ends, not even call 0 */
    atomic_store(&cp_mk.next_kc, 0);
    atomic_store(&cp_mk.next_first, 0);
    atomic_store(&cp_mk.start_delay, 1);
  }
}

void cp_mask_delay_attached(void) { atomic_fetch_add_explicit(&g_attached, 1, memory_order_relaxed); }

/* The process's first group start, on its thread: the delay's clock starts;
 * auto, one rank of each communicator: no delay (above); the next API call
 * then decides by the rule (its path forces a sample). */
void cp_mask_delay_begin(int tid) {
  g_delay_end = cp_clock_now() + g_delay_ns;
  if (g_delay_auto && atomic_load_explicit(&cp_mk.start_delay, memory_order_relaxed) &&
      !atomic_load(&g_ids_shared) && atomic_load(&g_nids) == atomic_load(&g_attached) &&
      init_threads_gone_but(tid)) {
    atomic_store(&g_delay_skipped, 1);
    atomic_store(&cp_mk.start_delay, 0);
  }
}

/* At the first thread's outermost group stops while the delay runs: it
 * ends at the first one D after its first group start (the next API call
 * then decides by the rule).  A call of its own: it runs only in the
 * first D ms. */
void cp_mask_delay_tick(void) {
  if (cp_clock_now() >= g_delay_end) atomic_store(&cp_mk.start_delay, 0);
}

#pragma GCC visibility pop
