/*
 * frozen.c — ranks whose event mask froze, grouped by reason (frozen.h).
 */
#include "frozen.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cp_frz_from_rank(const cp_rank_data *r, cp_frz *e) {
  memset(e, 0, sizeof *e);
  size_t len = strnlen(r->mask_frozen, sizeof r->mask_frozen);
  if (!len) return 0;
  e->ranges = malloc(sizeof *e->ranges);
  if (!e->ranges) return -1;
  e->reason = r->mask_frozen;
  e->len = (uint32_t)len;
  e->nranges = 1;
  e->ranges[0].lo = e->ranges[0].hi = r->rank;
  return 1;
}

static int reason_cmp(const void *x, const void *y) {
  const cp_frz *a = x, *b = y;
  int c = memcmp(a->reason, b->reason, a->len < b->len ? a->len : b->len);
  if (c) return c;
  return a->len < b->len ? -1 : a->len > b->len;
}

static int range_cmp(const void *x, const void *y) {
  const cp_rank_range *a = x, *b = y;
  if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
  return a->hi < b->hi ? -1 : a->hi > b->hi;
}

/* Sort and join overlapping or adjacent ranges in place; the new count. */
static uint32_t ranges_coalesce(cp_rank_range *r, uint32_t n) {
  if (!n) return 0;
  qsort(r, n, sizeof *r, range_cmp);
  uint32_t m = 0;
  for (uint32_t i = 1; i < n; i++) {
    if ((int64_t)r[i].lo <= (int64_t)r[m].hi + 1) {
      if (r[i].hi > r[m].hi) r[m].hi = r[i].hi;
    } else {
      r[++m] = r[i];
    }
  }
  return m + 1;
}

/* Move the ranges of g[1, k) into g[0] (same reason); frees theirs. */
static void group_join(cp_frz *g, size_t k) {
  size_t total = 0;
  for (size_t i = 0; i < k; i++) total += g[i].nranges;
  cp_rank_range *all = total > g[0].nranges ? realloc(g[0].ranges, total * sizeof *all) : g[0].ranges;
  if (all) {
    g[0].ranges = all;
    for (size_t i = 1; i < k; i++) {
      memcpy(all + g[0].nranges, g[i].ranges, g[i].nranges * sizeof *all);
      g[0].nranges += g[i].nranges;
    }
  }
  for (size_t i = 1; i < k; i++) { free(g[i].ranges); g[i].ranges = NULL; g[i].nranges = 0; }
  g[0].nranges = ranges_coalesce(g[0].ranges, g[0].nranges);
}

size_t cp_frz_combine(cp_frz *v, size_t n) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, reason_cmp);
  size_t m = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && !reason_cmp(&v[i], &v[j])) j++;
    group_join(v + i, j - i);
    v[m++] = v[i];
    i = j;
  }
  return m;
}

void cp_frz_free(cp_frz *v, size_t n) {
  for (size_t i = 0; v && i < n; i++) { free(v[i].ranges); v[i].ranges = NULL; }
}

size_t cp_frz_packed_size(const cp_frz *v, size_t n) {
  size_t b = 0;
  for (size_t i = 0; i < n; i++) b += 8 + v[i].len + (size_t)v[i].nranges * 8;
  return b;
}

static unsigned char *put32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); return p + 4; }
static uint32_t get32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }

size_t cp_frz_pack(unsigned char *p, const cp_frz *v, size_t n) {
  unsigned char *q = p;
  for (size_t i = 0; i < n; i++) {
    q = put32(q, v[i].len);
    memcpy(q, v[i].reason, v[i].len); q += v[i].len;
    q = put32(q, v[i].nranges);
    for (uint32_t j = 0; j < v[i].nranges; j++) {
      q = put32(q, (uint32_t)v[i].ranges[j].lo);
      q = put32(q, (uint32_t)v[i].ranges[j].hi);
    }
  }
  return (size_t)(q - p);
}

size_t cp_frz_packed_span(const unsigned char *p, const unsigned char *end, uint32_t count) {
  const unsigned char *q = p;
  for (uint32_t i = 0; i < count; i++) {
    if (end - q < 4) return 0;
    uint32_t len = get32(q); q += 4;
    if ((size_t)(end - q) < (size_t)len + 4) return 0;
    q += len;
    uint32_t nr = get32(q); q += 4;
    if ((size_t)(end - q) / 8 < nr) return 0;
    q += (size_t)nr * 8;
  }
  return (size_t)(q - p);
}

int cp_frz_unpack(const unsigned char *p, uint32_t count, cp_frz *out) {
  for (uint32_t i = 0; i < count; i++) {
    cp_frz *e = &out[i];
    e->len = get32(p); p += 4;
    e->reason = (const char *)p; p += e->len;
    e->nranges = get32(p); p += 4;
    e->ranges = malloc(((size_t)e->nranges + 1) * sizeof *e->ranges);
    if (!e->ranges) { cp_frz_free(out, i); return -1; }
    for (uint32_t j = 0; j < e->nranges; j++, p += 8) {
      e->ranges[j].lo = (int32_t)get32(p);
      e->ranges[j].hi = (int32_t)get32(p + 4);
    }
  }
  return 0;
}

uint64_t cp_frz_nranks(const cp_rank_range *r, size_t n) {
  uint64_t k = 0;
  for (size_t i = 0; i < n; i++) if (r[i].hi >= r[i].lo) k += (uint64_t)((int64_t)r[i].hi - r[i].lo + 1);
  return k;
}

static int lowest_cmp(const void *x, const void *y) {
  const cp_frozen *a = x, *b = y;
  int32_t la = a->nranges ? a->ranges[0].lo : INT32_MAX, lb = b->nranges ? b->ranges[0].lo : INT32_MAX;
  if (la != lb) return la < lb ? -1 : 1;
  return strcmp(a->reason, b->reason);
}

void cp_frozen_sort(cp_frozen *v, size_t n) { if (n) qsort(v, n, sizeof *v, lowest_cmp); }

/* "0-3,5,8-9" into b; ends in ",..." when it does not fit (thousands of
 * scattered ranks would make the line unreadable anyway: summary.json
 * lists them all). */
void cp_rank_ranges_text(char *b, size_t n, const cp_rank_range *r, size_t nr) {
  size_t len = 0;
  if (n < 8) { if (n) b[0] = 0; return; }
  b[0] = 0;
  for (size_t i = 0; i < nr; i++) {
    char one[32];
    if (r[i].lo == r[i].hi) snprintf(one, sizeof one, "%s%d", i ? "," : "", r[i].lo);
    else snprintf(one, sizeof one, "%s%d-%d", i ? "," : "", r[i].lo, r[i].hi);
    size_t ol = strlen(one);
    if (len + ol + 5 > n) { snprintf(b + len, n - len, ",..."); return; }
    memcpy(b + len, one, ol + 1);
    len += ol;
  }
}
