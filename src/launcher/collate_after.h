/*
 * collate_after.h — the launcher's two ways of starting the program
 * (collate_after.c): exec it in place (the default: no extra process), or,
 * with --collate, run it as a child and collate its folder once it ended.
 */
#ifndef COLLPROF_COLLATE_AFTER_H
#define COLLPROF_COLLATE_AFTER_H

/* execv(path, argv); a file without #! goes to /bin/sh, as execvp does.
 * Returns only on failure, with errno set by the exec. */
void cp_exec_program(const char *path, char **argv);

/* Runs path/argv as a child and waits for it: SIGTERM, SIGHUP, SIGUSR1,
 * SIGUSR2, SIGINT and SIGQUIT sent to the launcher go on to it, but for
 * SIGINT and SIGQUIT typed at a terminal, which reach the child already
 * (same process group).
 * Then runs <launcher's folder>/collprof-collate on dir (summary.log,
 * summary.json, report.html, sizes.txt there) with the LD_PRELOAD the user
 * had (preload_before: NULL for none), so the profiler is not loaded into
 * it.  Returns the program's exit status (128 + the signal that killed it;
 * 127/126 when it could not be started), whatever the collation did. */
int cp_run_then_collate(const char *prog, const char *path, char **argv, const char *dir,
                        const char *preload_before, int quiet);

#endif
