/*
 * wrappers.c — the entry points libcollprof-mpi.so puts in front of MPI
 * (mpi_layer.h): C MPI_Init, MPI_Init_thread, MPI_Finalize; Fortran
 * mpi_init / mpi_init_thread / mpi_finalize in the four name manglings
 * (mpi_init, mpi_init_, mpi_init__, MPI_INIT) and the mpi_f08 ones
 * (mpi_init_f08_, ...: in Open MPI 4.1 those reach PMPI_Init directly, so
 * wrapping only MPI_Init would miss them).  The Fortran wrappers call the
 * MPI library's own Fortran routine of the same name (dlsym RTLD_NEXT),
 * so Fortran-side set-up is untouched, and run our hooks around it; the
 * hooks run once whichever way the program got in.
 *
 * A constructor points NCCL_PROFILER_PLUGIN at the libcollprof.so this
 * library is linked with, when the user has not chosen a plugin, so that
 * preloading this one library is enough.
 */
#include "mpi_layer.h"
#include "collprof.h"
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((constructor)) static void cp_mpi_ctor(void) {
  if (getenv("NCCL_PROFILER_PLUGIN")) return;
  Dl_info info;
  if (!dladdr((void *)collprof_now_ns, &info) || !info.dli_fname) {
    fprintf(stderr, "collprof: cannot find libcollprof.so; set NCCL_PROFILER_PLUGIN yourself\n");
    return;
  }
  char real[PATH_MAX];
  const char *p = realpath(info.dli_fname, real) ? real : info.dli_fname;
  setenv("NCCL_PROFILER_PLUGIN", p, 0);
}

int cp_mpi_usable(void) {
  int init = 0, fin = 0;
  if (PMPI_Initialized(&init) != MPI_SUCCESS || !init) return 0;
  if (PMPI_Finalized(&fin) != MPI_SUCCESS || fin) return 0;
  return 1;
}

/* ---- C ---- */

int MPI_Init(int *argc, char ***argv) {
  int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) cp_mpi_after_init();
  return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  /* the level asked for goes to MPI as is; provided is what MPI set */
  int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) cp_mpi_after_init();
  return rc;
}

int MPI_Finalize(void) {
  cp_mpi_before_finalize();
  return PMPI_Finalize();
}

/* ---- Fortran ---- */

typedef void (*f_init_t)(MPI_Fint *);
typedef void (*f_init_thread_t)(MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void (*f_fin_t)(MPI_Fint *);

static void *next_sym(const char *name) { return dlsym(RTLD_NEXT, name); }

static void f_init(const char *name, MPI_Fint *ierr) {
  f_init_t real = (f_init_t)next_sym(name);
  if (real) real(ierr);
  else { int rc = PMPI_Init(NULL, NULL); if (ierr) *ierr = (MPI_Fint)rc; }
  if (!ierr || *ierr == MPI_SUCCESS) cp_mpi_after_init();
}

static void f_init_thread(const char *name, MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) {
  f_init_thread_t real = (f_init_thread_t)next_sym(name);
  if (real) real(required, provided, ierr);
  else {
    int prov = 0;
    int rc = PMPI_Init_thread(NULL, NULL, required ? (int)*required : MPI_THREAD_SINGLE, &prov);
    if (provided) *provided = (MPI_Fint)prov;
    if (ierr) *ierr = (MPI_Fint)rc;
  }
  if (!ierr || *ierr == MPI_SUCCESS) cp_mpi_after_init();
}

static void f_finalize(const char *name, MPI_Fint *ierr) {
  cp_mpi_before_finalize();
  f_fin_t real = (f_fin_t)next_sym(name);
  if (real) real(ierr);
  else { int rc = PMPI_Finalize(); if (ierr) *ierr = (MPI_Fint)rc; }
}

#define F_INIT(n) void n(MPI_Fint *ierr) { f_init(#n, ierr); }
#define F_INIT_THREAD(n) \
  void n(MPI_Fint *req, MPI_Fint *prov, MPI_Fint *ierr) { f_init_thread(#n, req, prov, ierr); }
#define F_FIN(n) void n(MPI_Fint *ierr) { f_finalize(#n, ierr); }

/* prototypes keep -Wmissing-declarations quiet and document the ABI */
void mpi_init(MPI_Fint *); void mpi_init_(MPI_Fint *); void mpi_init__(MPI_Fint *);
void MPI_INIT(MPI_Fint *); void mpi_init_f08_(MPI_Fint *);
void mpi_init_thread(MPI_Fint *, MPI_Fint *, MPI_Fint *);
void mpi_init_thread_(MPI_Fint *, MPI_Fint *, MPI_Fint *);
void mpi_init_thread__(MPI_Fint *, MPI_Fint *, MPI_Fint *);
void MPI_INIT_THREAD(MPI_Fint *, MPI_Fint *, MPI_Fint *);
void mpi_init_thread_f08_(MPI_Fint *, MPI_Fint *, MPI_Fint *);
void mpi_finalize(MPI_Fint *); void mpi_finalize_(MPI_Fint *); void mpi_finalize__(MPI_Fint *);
void MPI_FINALIZE(MPI_Fint *); void mpi_finalize_f08_(MPI_Fint *);

F_INIT(mpi_init) F_INIT(mpi_init_) F_INIT(mpi_init__) F_INIT(MPI_INIT) F_INIT(mpi_init_f08_)
F_INIT_THREAD(mpi_init_thread) F_INIT_THREAD(mpi_init_thread_) F_INIT_THREAD(mpi_init_thread__)
F_INIT_THREAD(MPI_INIT_THREAD) F_INIT_THREAD(mpi_init_thread_f08_)
F_FIN(mpi_finalize) F_FIN(mpi_finalize_) F_FIN(mpi_finalize__) F_FIN(MPI_FINALIZE)
F_FIN(mpi_finalize_f08_)
