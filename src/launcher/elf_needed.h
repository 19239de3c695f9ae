/*
 * elf_needed.h — does a program link an MPI library?  The launcher asks this
 * to decide between preloading libcollprof-mpi.so (MPI programs) and only
 * libcollprof.so (torchrun workers, single processes).  A cheap read of the
 * ELF dynamic section's DT_NEEDED entries: no ldd, nothing is run or loaded.
 */
#ifndef COLLPROF_LAUNCHER_ELF_NEEDED_H
#define COLLPROF_LAUNCHER_ELF_NEEDED_H

/* 1 if the ELF file at path has a DT_NEEDED entry starting with "libmpi"
 * (Open MPI's libmpi.so.40, libmpi_mpifh, MPICH's libmpi.so.12, libmpich),
 * 0 if it has none, -1 if it is not a readable ELF file (a script, ...). */
int cp_elf_links_mpi(const char *path);

/* Resolve a program name the way execvp does (PATH search when it has no
 * '/'), into buf.  Returns 0 when an executable regular file was found. */
int cp_find_program(const char *name, char *buf, unsigned long len);

#endif
