/*
 * bump.c — chunks made ahead for memory kept for the process's life
 * (bump.h).  One mutex: allocations are one-offs (a new path, a new
 * string), never per event.
 */
#include <pthread.h>
#include <stdlib.h>
#pragma GCC visibility push(hidden)
#include "bump.h"
#include "oneoff.h"

#define CHUNK (64u << 10)
#define PAGE 4096u
#define STR_AVOID 128u   /* cp_bump_alloc_str (bump.h) */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char *cur;          /* the chunk handed out from */
static size_t used;        /* bytes of it handed out */

/* A new zeroed chunk (mu held): a one-off set-up (oneoff.h). */
static int chunk_new(void) {
  const uint64_t o = cp_oneoff_begin();
  char *c = calloc(1, CHUNK);
  cp_oneoff_end(o);
  if (!c) return -1;
  cur = c;   /* the old one's rest is left: chunks are never freed */
  used = 0;
  return 0;
}

/* Bytes to skip so that at does not start in a page's last STR_AVOID
 * bytes (cp_bump_alloc_str, bump.h). */
static size_t skip_page_end(const char *at) {
  const size_t off = (size_t)((uintptr_t)at & (PAGE - 1));
  return off > PAGE - STR_AVOID ? PAGE - off : 0;
}

static void *take(size_t n, int avoid_page_end) {
  n = (n + 7) & ~(size_t)7;
  if (n == 0) n = 8;
  if (n > CHUNK / 4) return calloc(1, n);
  pthread_mutex_lock(&mu);
  void *p = NULL;
  size_t at = 0;
  int fits = cur != NULL;
  if (fits) {
    at = used + (avoid_page_end ? skip_page_end(cur + used) : 0);
    fits = at + n <= CHUNK;
  }
  if (!fits && chunk_new() == 0) {
    at = avoid_page_end ? skip_page_end(cur) : 0;
    fits = 1;
  }
  if (fits) {
    p = cur + at;
    used = at + n;
  }
  pthread_mutex_unlock(&mu);
  return p;
}

void *cp_bump_alloc(size_t n) { return take(n, 0); }
void *cp_bump_alloc_str(size_t n) { return take(n, 1); }

void cp_bump_prepare(void) {
  pthread_mutex_lock(&mu);
  if (!cur || used > CHUNK / 2) (void)chunk_new();
  pthread_mutex_unlock(&mu);
}
