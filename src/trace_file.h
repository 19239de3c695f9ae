/*
 * trace_file.h — the trace file as trace_writer.c uses it: the io lock
 * that every file operation holds (taken by a signal handler too), the
 * records' writes, and the tail that stays last.  Owned by trace_file.c;
 * the functions the rest of the plugin calls (cp_trace_path,
 * cp_trace_rename, ...) are declared in trace.h and trace_writer.h.
 */
#ifndef COLLPROF_TRACE_FILE_H
#define COLLPROF_TRACE_FILE_H
#include <stddef.h>
#include <stdint.h>
#pragma GCC visibility push(hidden)

/* The calling thread's kernel tid (cached per thread; 0 again after a
 * fork, in the child), and the system call itself. */
int cp_tfile_tid(void);
int cp_tfile_raw_tid(void);
/* Sleep ns nanoseconds (< 1 s). */
void cp_tfile_nap(long ns);

/* The io lock: a mutex for ordinary threads plus an owner word that the
 * signal-time flush takes with compare-and-swap only (trace_file.c). */
void cp_tfile_lock(void);
void cp_tfile_unlock(void);
/* A signal handler waits for the file: whoever holds it lets go after
 * its current block. */
int cp_tfile_signal_waits(void);
/* The signal-time flush: take the file (waiting up to ~700 ms for another
 * thread's write; never when the handler interrupted the holder itself):
 * 1 taken, and then kept after cp_tfile_signal_keep until
 * cp_trace_resume_signal_safe.  Async-signal-safe. */
int cp_tfile_signal_take(void);
void cp_tfile_signal_keep(void);

/* Lock held.  Before a drain's first record: open the file if needed and,
 * if it ends with a tail, cut it off (*tail_cut set).  1 the file is
 * open, 0 there is none (the records are lost: cp_tfile_lost). */
int cp_tfile_records_begin(int sig, int *tail_cut);
/* Write one formatted block of nrec records at the end (counted as lines,
 * or as lost when the write fails: the file is cut back to whole lines). */
void cp_tfile_emit(const char *buf, size_t len, uint64_t nrec, int sig);
/* After a drain that cut the tail: write it again at the end. */
void cp_tfile_records_end(int tail_cut);
/* Records lost without a file, and how many were lost so far (written:
 * cp_trace_lines). */
void cp_tfile_lost(uint64_t nrec);
uint64_t cp_tfile_lost_count(void);

/* Lock held: whole lines appended at the end (returns their offset, -1 on
 * error), or made the tail (cp_trace_set_tail); close the descriptor
 * (a later write reopens the file without truncating it). */
long cp_tfile_append(const char *text, size_t len);
long cp_tfile_set_tail(char *copy, size_t len);   /* copy: malloc'd, taken over */
void cp_tfile_close(void);

/* At trace start: the file's name from output.c (takes the lock). */
void cp_tfile_name_from_output(void);
/* In the child of a fork: the parent's descriptor and lock are not ours. */
void cp_tfile_after_fork(void);

/* From trace_writer.c: cp_trace_start has run. */
int cp_trace_started(void);

#pragma GCC visibility pop
#endif
