/*
 * replay_expect.c — per-path event counts that the synthetic generators
 * produced, written as JSON {"path":count} for --expect FILE.
 *
 * The generators know what they built; tests compare these numbers with the
 * plugin's path records instead of typing expectations by hand.  Paths use
 * the plugin's element names (Type or Type:func, "/"-joined, NULL parent =
 * root).  Next to it, FILE.states holds {"path":state callbacks} the same way
 * and FILE.info the number of init and finalize calls.  A small mutex-protected table: generators add in bulk per thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "replay.h"

typedef struct { char *path; uint64_t n, states; } rp_exp;
static pthread_mutex_t exp_lock = PTHREAD_MUTEX_INITIALIZER;
static rp_exp *exp_tab;
static size_t exp_n, exp_cap;

void rp_expect_add(const char *path, uint64_t n, uint64_t states) {
  pthread_mutex_lock(&exp_lock);
  size_t i;
  for (i = 0; i < exp_n; i++) if (!strcmp(exp_tab[i].path, path)) break;
  if (i == exp_n) {
    if (exp_n == exp_cap) {
      exp_cap = exp_cap ? 2 * exp_cap : 32;
      exp_tab = realloc(exp_tab, exp_cap * sizeof *exp_tab);
    }
    exp_tab[exp_n].path = strdup(path);
    exp_tab[exp_n].n = 0;
    exp_tab[exp_n].states = 0;
    exp_n++;
  }
  exp_tab[i].n += n;
  exp_tab[i].states += states;
  pthread_mutex_unlock(&exp_lock);
}

static int expect_write_one(const char *file, int states) {
  FILE *f = fopen(file, "w");
  if (!f) { rp_log("cannot write %s", file); return -1; }
  pthread_mutex_lock(&exp_lock);
  fputc('{', f);
  int first = 1;
  for (size_t i = 0; i < exp_n; i++) {  /* path strings never need escaping */
    uint64_t v = states ? exp_tab[i].states : exp_tab[i].n;
    if (!v) continue;
    fprintf(f, "%s\"%s\":%llu", first ? "" : ",", exp_tab[i].path, (unsigned long long)v);
    first = 0;
  }
  fputs("}\n", f);
  pthread_mutex_unlock(&exp_lock);
  return fclose(f) == 0 ? 0 : -1;
}

int rp_expect_write(const char *file) {
  char states[4096];
  snprintf(states, sizeof states, "%s.states", file);
  int a = expect_write_one(file, 0), b = expect_write_one(states, 1), c = -1;
  snprintf(states, sizeof states, "%s.info", file);
  FILE *f = fopen(states, "w");
  if (f) {
    fprintf(f, "{\"inits\":%llu,\"finis\":%llu}\n", (unsigned long long)rp_host_inits(),
            (unsigned long long)rp_host_finis());
    c = fclose(f);
  }
  return a || b || c ? -1 : 0;
}
