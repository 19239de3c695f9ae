/*
 * output.h — where collprof's files go: the output folder and the name of
 * this process's trace file.
 *
 * Owned by output.c.  Folder rule (chosen once per process): the folder
 * the MPI layer passed to collprof_set_identity (rank 0's choice), else
 * COLLPROF_OUTPUT_DIR, else collprof-<SLURM_JOB_ID>, else
 * collprof-<YYYYMMDD-HHMMSS>; created with mkdir -p semantics when the
 * first file is opened.  Trace file: rank<R>.jsonl once the world rank is
 * known, pid<PID>.jsonl before (and without MPI).
 */
#ifndef COLLPROF_OUTPUT_H
#define COLLPROF_OUTPUT_H
#include <stddef.h>

/* The folder in effect (not created by this call).  Never NULL; the
 * string stays valid for the life of the process. */
const char *cp_output_dir(void);

/* Create the folder in effect (mkdir -p).  0 on success, else -1 with
 * errno set. */
int cp_output_mkdir(void);

/* mkdir -p of any path; async-signal-safe (mkdir/stat only).  0 or -1. */
int cp_mkdir_p(const char *path);

/* <dir>/rank<R>.jsonl or <dir>/pid<PID>.jsonl, NUL-terminated. */
void cp_output_trace_path(char *buf, size_t cap);

/* <dir>/<name>: any other file of this process in the folder. */
void cp_output_file_path(char *buf, size_t cap, const char *name);

/* Record the world rank/size and rank 0's folder (NULL or "": keep ours).
 * Returns 1 when the folder changed (the caller moves open files). */
int cp_output_set_identity(int world_rank, int world_size, const char *dir);

/* The old folder after a change, when this process created it and it may
 * now be empty (the caller tries rmdir); NULL otherwise. */
const char *cp_output_abandoned_dir(void);

/* -1 / 0 until collprof_set_identity. */
int cp_output_world_rank(void);
int cp_output_world_size(void);

/* Set by the MPI layer (collprof_set_mpi_managed). */
void cp_output_set_mpi_managed(int on);
int cp_output_mpi_managed(void);

/* 1 after collprof_shutdown: the plugin's callbacks should ignore and
 * count events from then on (the event callbacks test it). */
int cp_output_is_shut_down(void);
void cp_output_mark_shut_down(void);

/* The exit-time writer (local_write.c), registered with atexit() by the
 * first cp_trace_start: writes the local tail unless MPI already did and
 * nothing changed since; nothing in a fork child. */
void cp_local_atexit(void);

#endif
