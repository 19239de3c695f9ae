/*
 * export_html.c — one self-contained HTML report (collprof-collate --html):
 * the run summary, the top paths table (by total time), and per top path a
 * bar chart of its time on each rank, as inline SVG, so imbalance shows at
 * a glance, and the top Coll/P2p paths' message sizes (export_sizes.c): bus
 * bandwidth against size, and a table per path.  No network, no external scripts or styles: one file to mail or
 * attach to a ticket.  A few lines of inline script only highlight one
 * rank's bars across charts on hover, and set a marker the tests look for.
 *
 * Machine-checkable: every number cell carries data-key (the summary.json
 * key) and data-value (the exact integer or the same float), each bar
 * data-rank, data-path (global id) and data-ns (the rank's total_ns of the
 * path; "" with data-absent="1" when the rank does not have the path).
 */
#include "export.h"
#include "frozen.h"
#include "gpu_estimate.h"
#include "reduce.h"
#include "report.h"
#include "collprof.h"
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void cp_h(FILE *f, const char *s) {  /* HTML text/attribute escape */
  for (; s && *s; s++) {
    switch (*s) {
      case '&': fputs("&amp;", f); break;
      case '<': fputs("&lt;", f); break;
      case '>': fputs("&gt;", f); break;
      case '"': fputs("&quot;", f); break;
      case '\'': fputs("&#39;", f); break;
      default: fputc(*s, f);
    }
  }
}

/* A call path, breakable after each '/'. */
static void cp_hpath(FILE *f, const char *p) {
  for (const char *q = p; q && *q;) {
    size_t n = strcspn(q, "/");
    char el[512];
    snprintf(el, sizeof el, "%.*s", (int)(n < sizeof el ? n : sizeof el - 1), q);
    cp_h(f, el);
    q += n;
    if (*q == '/') { fputs("/<wbr>", f); q++; }
  }
}

static const char *cp_fmt_ns(double ns, char *b, size_t n) {
  double a = ns < 0 ? -ns : ns;
  if (a < 1e3) snprintf(b, n, "%.0f ns", ns);
  else if (a < 1e6) snprintf(b, n, "%.2f \xc2\xb5s", ns / 1e3);
  else if (a < 1e9) snprintf(b, n, "%.2f ms", ns / 1e6);
  else snprintf(b, n, "%.3f s", ns / 1e9);
  return b;
}

static const char *cp_fmt_bytes(uint64_t v, char *b, size_t n) {
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double x = (double)v;
  int i = 0;
  while (x >= 1024 && i < 5) x /= 1024, i++;
  if (i == 0) snprintf(b, n, "%" PRIu64 " B", v);
  else snprintf(b, n, "%.1f %s", x, u[i]);
  return b;
}

/* A summary row: label, shown value, and the summary.json key/value. */
static void cp_row(FILE *f, const char *label, const char *shown, const char *key,
                   const char *value) {
  fputs("<div class=\"kv\"><span>", f);
  cp_h(f, label);
  fputs("</span><b", f);
  if (key) {
    fputs(" data-key=\"", f);
    cp_h(f, key);
    fputs("\" data-value=\"", f);
    cp_h(f, value);
    fputc('"', f);
  }
  fputc('>', f);
  cp_h(f, shown);
  fputs("</b></div>\n", f);
}

static void cp_row_u(FILE *f, const char *label, uint64_t v, const char *key, int is_ns) {
  char shown[64], val[32];
  snprintf(val, sizeof val, "%" PRIu64, v);
  if (is_ns) cp_fmt_ns((double)v, shown, sizeof shown);
  else snprintf(shown, sizeof shown, "%" PRIu64, v);
  cp_row(f, label, shown, key, val);
}

static const char cp_css[] =
  "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:1200px}"
  "h1{font-size:1.5em;margin:0 0 .2em}h2{font-size:1.15em;margin:1.5em 0 .5em;"
  "border-bottom:1px solid #ccc}"
  "table{border-collapse:collapse}th,td{padding:2px 8px;text-align:left;vertical-align:top}"
  ".summary{display:grid;grid-template-columns:repeat(auto-fill,minmax(270px,1fr));gap:2px 16px}"
  ".kv span{color:#555;margin-right:.5em}.kv b{font-weight:600;word-break:break-word}"
  ".kv.wide{grid-column:1/-1}"
  "table.paths th{background:#eee;position:sticky;top:0}table.paths td.n{text-align:right;"
  "font-variant-numeric:tabular-nums;white-space:nowrap}"
  "table.paths tr:nth-child(even) td{background:#f7f7f7}"
  "code{font-size:12px}"
  ".charts{display:flex;flex-wrap:wrap;gap:16px}"
  "figure{margin:0;border:1px solid #ddd;padding:8px;border-radius:4px}"
  "figcaption{font-size:12px;max-width:440px;margin-bottom:4px}"
  "svg text{font:11px sans-serif;fill:#333}rect.bar{fill:#4e79a7}rect.bar.max{fill:#e15759}"
  "rect.bar.min{fill:#59a14f}rect.bar.hl{fill:#f28e2b}line.avg{stroke:#555;stroke-dasharray:3 2}"
  ".note{color:#666;font-size:12px}";

/* Highlight a rank everywhere on hover; mark the page as rendered. */
static const char cp_js[] =
  "(function(){var bars=document.querySelectorAll('rect.bar');"
  "function hl(r,on){document.querySelectorAll('rect.bar[data-rank=\"'+r+'\"]')"
  ".forEach(function(b){b.classList.toggle('hl',on);});}"
  "bars.forEach(function(b){b.addEventListener('mouseenter',function(){hl(b.dataset.rank,true);});"
  "b.addEventListener('mouseleave',function(){hl(b.dataset.rank,false);});});"
  "document.body.setAttribute('data-bars',String(bars.length));"
  "document.body.setAttribute('data-ready','1');})();";

/* Per-rank total_ns of each top path: val[t * nranks + k], -1 absent. */
static int64_t *cp_matrix(const cp_run *run, const cp_summary *s, const size_t *top, size_t ntop) {
  size_t nr = run->nranks;
  int64_t *val = malloc((ntop * nr != 0 ? ntop * nr : 1) * sizeof *val);
  int64_t *slot = malloc((s->npaths ? s->npaths : 1) * sizeof *slot);  /* id -> top index */
  if (!val || !slot) { free(val); free(slot); return NULL; }
  for (size_t i = 0; i < ntop * nr; i++) val[i] = -1;
  for (size_t i = 0; i < s->npaths; i++) slot[i] = -1;
  for (size_t t = 0; t < ntop; t++) slot[top[t]] = (int64_t)t;
  for (size_t k = 0; k < nr; k++) {
    const cp_rank_data *r = &run->ranks[k];
    for (size_t i = 0; i < r->npaths; i++) {
      int64_t id = cp_export_global_id(s, &r->paths[i]);
      if (id < 0 || (uint64_t)id >= s->npaths || slot[id] < 0) continue;
      int64_t *v = &val[(size_t)slot[id] * nr + k];
      *v = (*v < 0 ? 0 : *v) + (int64_t)r->paths[i].total_ns;
    }
  }
  free(slot);
  return val;
}

static void cp_chart(FILE *f, const cp_run *run, const cp_gpath *g, const int64_t *v) {
  size_t nr = run->nranks;
  int64_t mx = 0, mn = INT64_MAX;
  for (size_t k = 0; k < nr; k++) {
    if (v[k] > mx) mx = v[k];
    if (v[k] >= 0 && v[k] < mn) mn = v[k];
  }
  const int rowh = nr <= 32 ? 16 : nr <= 128 ? 6 : 3, labels = rowh >= 12;
  const int x0 = 64, bw = 300, w = x0 + bw + 80, h = (int)nr * rowh + 8;
  char b[64];
  cp_gderived d; cp_gpath_derive(NULL, g, &d);
  fprintf(f, "<figure data-path=\"%" PRId64 "\"><figcaption><b>#%" PRId64 "</b> <code>", g->id, g->id);
  cp_hpath(f, g->path);
  fprintf(f, "</code><br>total per rank; avg %s, imbalance %.1f%%</figcaption>\n",
          cp_fmt_ns(d.avg_ns, b, sizeof b), d.imbalance_pct);
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
             "viewBox=\"0 0 %d %d\" role=\"img\">\n", w, h, w, h);
  for (size_t k = 0; k < nr; k++) {
    const cp_rank_data *r = &run->ranks[k];
    int y = 4 + (int)k * rowh;
    double frac = mx > 0 && v[k] > 0 ? (double)v[k] / (double)mx : 0;
    int bh = rowh > 3 ? rowh - 2 : rowh;
    if (labels) fprintf(f, "<text x=\"0\" y=\"%d\">rank %d</text>", y + rowh - 4, r->rank);
    const char *cls = v[k] < 0 ? "" : v[k] == mx ? " max" : v[k] == mn ? " min" : "";
    fprintf(f, "<rect class=\"bar%s\" data-rank=\"%d\" data-path=\"%" PRId64 "\" ", cls, r->rank,
            g->id);
    if (v[k] >= 0) fprintf(f, "data-ns=\"%" PRId64 "\" ", v[k]);
    else fputs("data-ns=\"\" data-absent=\"1\" ", f);
    fprintf(f, "x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\"><title>rank %d (", x0, y,
            frac * bw, bh, r->rank);
    cp_h(f, r->host);
    fprintf(f, "): %s</title></rect>", v[k] >= 0 ? cp_fmt_ns((double)v[k], b, sizeof b) : "absent");
    if (labels)
      fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text>", x0 + (int)(frac * bw) + 4, y + rowh - 4,
              v[k] >= 0 ? cp_fmt_ns((double)v[k], b, sizeof b) : "absent");
    fputc('\n', f);
  }
  if (mx > 0 && d.avg_ns > 0) {
    double ax = x0 + d.avg_ns / (double)mx * bw;
    fprintf(f, "<line class=\"avg\" x1=\"%.1f\" y1=\"2\" x2=\"%.1f\" y2=\"%d\"><title>average %s"
               "</title></line>\n", ax, ax, h - 2, cp_fmt_ns(d.avg_ns, b, sizeof b));
  }
  fputs("</svg></figure>\n", f);
}

static void cp_num_cell(FILE *f, const char *key, const char *value, const char *shown) {
  fprintf(f, "<td class=\"n\" data-key=\"%s\" data-value=\"%s\">", key, value);
  cp_h(f, shown);
  fputs("</td>", f);
}

static void cp_paths_table(FILE *f, const cp_summary *s, const size_t *top, size_t ntop) {
  fputs("<table class=\"paths\"><thead><tr><th>ID</th><th>path</th><th>calls</th><th>ranks</th>"
        "<th>total</th><th>self</th><th>% self</th><th>avg/rank</th><th>min (rank)</th>"
        "<th>max (rank)</th><th>imbalance</th><th>bytes</th><th>GPU time</th></tr></thead>"
        "<tbody>\n", f);
  for (size_t t = 0; t < ntop; t++) {
    const cp_gpath *g = &s->paths[top[t]];
    cp_pstat whole;
    const cp_pstat *st = cp_gpath_pstat(g, &whole);
    cp_gderived d; cp_gpath_derive(s, g, &d);
    char v[64], sh[96], b2[64];
    fprintf(f, "<tr data-path=\"%" PRId64 "\"><td class=\"n\" data-key=\"id\" data-value=\"%" PRId64
               "\">%" PRId64 "</td><td><code>", g->id, g->id, g->id);
    cp_hpath(f, g->path);
    fputs("</code></td>", f);
#define U(key, x, shownexpr)                                     \
    do { snprintf(v, sizeof v, "%" PRIu64, (uint64_t)(x)); shownexpr; cp_num_cell(f, key, v, sh); } while (0)
    U("calls", st->calls, snprintf(sh, sizeof sh, "%" PRIu64, st->calls));
    U("nranks", st->nranks, snprintf(sh, sizeof sh, "%u", st->nranks));
    U("total_ns", st->total_ns, cp_fmt_ns((double)st->total_ns, sh, sizeof sh));
    U("self_ns", st->self_ns, cp_fmt_ns((double)st->self_ns, sh, sizeof sh));
    snprintf(v, sizeof v, "%.6f", d.self_pct);
    snprintf(sh, sizeof sh, "%.1f%%", d.self_pct);
    cp_num_cell(f, "self_pct", v, sh);
    snprintf(v, sizeof v, "%.6f", d.avg_ns);
    cp_num_cell(f, "avg_ns", v, cp_fmt_ns(d.avg_ns, sh, sizeof sh));
    snprintf(v, sizeof v, "%" PRIu64, st->tmin_ns);
    snprintf(sh, sizeof sh, "%s (%d)", cp_fmt_ns((double)st->tmin_ns, b2, sizeof b2), st->tmin_rank);
    cp_num_cell(f, "min_ns", v, sh);
    snprintf(v, sizeof v, "%" PRIu64, st->tmax_ns);
    snprintf(sh, sizeof sh, "%s (%d)", cp_fmt_ns((double)st->tmax_ns, b2, sizeof b2), st->tmax_rank);
    cp_num_cell(f, "max_ns", v, sh);
    snprintf(v, sizeof v, "%.6f", d.imbalance_pct);
    snprintf(sh, sizeof sh, "%.1f%% (rank %d)", d.imbalance_pct, d.imbalance_rank);
    cp_num_cell(f, "imbalance_pct", v, sh);
    U("bytes", st->bytes, cp_fmt_bytes(st->bytes, sh, sizeof sh));
#undef U
    if (st->gpu_samples || st->gpu_ns) {
      snprintf(v, sizeof v, "%.6f", d.gpu_est_ns);
      snprintf(sh, sizeof sh, "%s%s", d.gpu_first_only ? ">" : d.gpu_exact ? "" : "~",
               cp_fmt_ns(d.gpu_est_ns, b2, sizeof b2));
      cp_num_cell(f, "gpu_est_ns", v, sh);
    } else {
      fputs("<td class=\"n\">-</td>", f);
    }
    fputs("</tr>\n", f);
  }
  fputs("</tbody></table>\n", f);
}

/* One wide row per reason the event mask froze, with its ranks. */
static void cp_frozen_rows(FILE *f, const cp_summary *s) {
  for (size_t i = 0; i < s->nfrozen; i++) {
    const cp_frozen *z = &s->frozen[i];
    char ranks[200];
    cp_rank_ranges_text(ranks, sizeof ranks, z->ranges, z->nranges);
    fprintf(f, "<div class=\"kv wide\"><span>event mask frozen</span><b>%s ", z->nranks == 1 ? "rank" : "ranks");
    cp_h(f, ranks);
    fputs(": ", f);
    cp_h(f, z->reason);
    fputs("</b></div>\n", f);
  }
}

static void cp_run_summary(FILE *f, const cp_summary *s) {
  const cp_agg *a = &s->agg;
  char t0[64], t1[64], b[128], v[64];
  cp_iso_time(a->start_wall_min_ns, t0, sizeof t0);
  cp_iso_time(a->end_wall_max_ns, t1, sizeof t1);
  fputs("<div class=\"summary\">\n<div class=\"kv wide\"><span>command</span><b data-key=\"command\" "
        "data-value=\"", f);
  cp_h(f, s->command);
  fputs("\"><code>", f);
  cp_h(f, s->command);
  fputs("</code></b></div>\n", f);
  cp_row(f, "start", t0, "startWall", t0);
  cp_row(f, "end", t1, "endWall", t1);
  snprintf(v, sizeof v, "%d", s->world_size);
  cp_row(f, "ranks", v, "ranks", v);
  cp_row_u(f, "ranks reported", a->ranks_reported, "ranksReported", 0);
  cp_row_u(f, "ranks with NCCL", a->ranks_with_nccl, "ranksWithNccl", 0);
  fputs("<div class=\"kv\"><span>hosts</span><b>", f);
  for (size_t i = 0; i < s->nhosts && i < 8; i++) {
    if (i) fputs(", ", f);
    cp_h(f, s->hosts[i].name);
    fprintf(f, " (%" PRIu64 ")", s->hosts[i].ranks);
  }
  if (s->nhosts > 8) fprintf(f, " and %zu more", s->nhosts - 8);
  fputs("</b></div>\n", f);
  snprintf(v, sizeof v, "%" PRIu64, a->runtime_max_ns);
  snprintf(b, sizeof b, "%s (rank %d)", cp_fmt_ns((double)a->runtime_max_ns, t0, sizeof t0),
           a->runtime_max_rank);
  cp_row(f, "runtime", b, "runtime_ns", v);
  cp_row_u(f, "events recorded", a->events_recorded, "events_recorded", 0);
  if (a->events_counted) cp_row_u(f, "events counted only (host sampling)", a->events_counted, "events_counted", 0);
  cp_row_u(f, a->overhead_insitu_ranks ? "estimated overhead (all ranks; callbacks timed in situ)"
                                       : "estimated overhead (all ranks)",
           a->overhead_ns, "overhead_ns", 1);
  snprintf(v, sizeof v, "%" PRIu64, a->memory_bytes);
  cp_row(f, "memory (all ranks)", cp_fmt_bytes(a->memory_bytes, b, sizeof b), "memory_bytes", v);
  cp_row_u(f, "unterminated events", a->unterminated, "unterminated", 0);
  cp_row_u(f, "blacklist evictions", a->blacklist_evictions, "blacklist_evictions", 0);
  cp_row_u(f, "PXN events", a->events_pxn, "events_pxn", 0);
  cp_row_u(f, "unknown parent", a->unknown_parent, "unknown_parent", 0);
  cp_row_u(f, "trace records dropped", a->trace_dropped, "trace_dropped", 0);
  cp_row_u(f, "GPU-sampled API calls", a->gpu_sampled_calls, "gpu_sampled_calls", 0);
  cp_row_u(f, "GPU samples dropped", a->gpu_samples_dropped, "gpu_samples_dropped", 0);
  cp_row_u(f, "GPU samples skipped", a->gpu_samples_deferred, "gpu_samples_deferred", 0);
  cp_frozen_rows(f, s);
  snprintf(v, sizeof v, "%zu", s->ncollisions);
  cp_row(f, "hash collisions", v, "hashCollisions", v);
  char mask[256];
  cp_mask_names(s->event_mask, mask, sizeof mask);
  fprintf(f, "<div class=\"kv wide\"><span>event mask</span><b data-key=\"eventMask\" "
             "data-value=\"%u\">%#x: %s</b></div>\n", s->event_mask, s->event_mask, mask);
  cp_gpu_rule_text(s->gpu_sample, s->gpu_sample_small, s->gpu_sample_small_bytes, b, sizeof b);
  cp_row(f, "GPU timing", b, NULL, NULL);
  cp_row(f, "trace", s->trace_on ? "on" : "off", NULL, NULL);
  if (s->periods[0]) cp_row(f, "periods", s->periods, NULL, NULL);
  if (s->windows[0]) cp_row(f, "profiled windows [s]", s->windows, NULL, NULL);
  snprintf(v, sizeof v, "%zu", s->npaths);
  cp_row(f, "call paths", v, NULL, NULL);
  /* communicators of one rank: NCCL sends no profiler event for their
   * calls (src/plugin.c, init_common), as summary.log marks them */
  char one[512];
  size_t len = 0, n1 = 0;
  one[0] = 0;
  for (size_t i = 0; i < s->ncomms; i++) {
    if (s->comms[i].nranks != 1) continue;
    if (n1++ < 8 && len < sizeof one)
      len += (size_t)snprintf(one + len, sizeof one - len, "%s%s", n1 > 1 ? ", " : "",
                              *s->comms[i].name ? s->comms[i].name : "-");
  }
  if (n1 > 8 && len < sizeof one) snprintf(one + len, sizeof one - len, " and %zu more", n1 - 8);
  if (n1) {
    fputs("<div class=\"kv wide\"><span>not profiled</span><b>", f);
    cp_h(f, one);
    fputs(" (" CP_ONE_RANK_WHY ")</b></div>\n", f);
  }
  fputs("</div>\n", f);
}

/* Bus bandwidth against size (log2 classes evenly spaced), where at least
 * two classes have one. */
static void cp_sizes_chart(FILE *f, const cp_summary *s, const cp_gpath *g, const cp_size_sum *c) {
  cp_size_row r[CP_GCLS];
  unsigned ks[CP_GCLS], n = 0;
  double mx = 0;
  for (unsigned k = 1; k < CP_GCLS; k++) {
    if (!c[k].calls && !c[k].samples) continue;
    cp_size_row_of(s, g, k, &c[k], &r[n]);
    if (r[n].busbw < 0) continue;
    if (r[n].busbw > mx) mx = r[n].busbw;
    ks[n++] = k;
  }
  if (n < 2 || mx <= 0) return;
  const int x0 = 48, y0 = 8, pw = 360, ph = 120, w = x0 + pw + 24, h = y0 + ph + 28;
  const unsigned k0 = ks[0], k1 = ks[n - 1];
  char a[32], b[32];
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
             "role=\"img\"><title>bus bandwidth by message size</title>\n", w, h, w, h);
  fprintf(f, "<line class=\"avg\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>", x0, y0 + ph, x0 + pw, y0 + ph);
  fprintf(f, "<text x=\"0\" y=\"%d\">%.3g GB/s</text><text x=\"0\" y=\"%d\">0</text>", y0 + 10, mx, y0 + ph);
  cp_size_text(1ull << (k0 - 1), a, sizeof a);
  cp_size_text(1ull << (k1 - 1), b, sizeof b);
  fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s</text>\n", x0,
          y0 + ph + 16, a, x0 + pw, y0 + ph + 16, b);
  fputs("<polyline fill=\"none\" stroke=\"#4e79a7\" stroke-width=\"2\" points=\"", f);
  for (unsigned i = 0; i < n; i++)
    fprintf(f, "%s%.1f,%.1f", i ? " " : "", x0 + (double)(ks[i] - k0) / (double)(k1 - k0) * pw,
            y0 + ph - r[i].busbw / mx * ph);
  fputs("\"/>\n", f);
  for (unsigned i = 0; i < n; i++) {
    cp_size_text(r[i].lo, a, sizeof a);
    fprintf(f, "<circle r=\"3\" fill=\"#4e79a7\" cx=\"%.1f\" cy=\"%.1f\"><title>%s: %.3f GB/s</title></circle>",
            x0 + (double)(ks[i] - k0) / (double)(k1 - k0) * pw, y0 + ph - r[i].busbw / mx * ph, a, r[i].busbw);
  }
  fputs("</svg>\n", f);
}

/* One top Coll/P2p path's size classes: the chart, then a table whose
 * cells carry data-key/data-value as the text export's columns. */
static void cp_sizes_figure(FILE *f, const cp_summary *s, const cp_gpath *g, const cp_size_sum *c) {
  fprintf(f, "<figure data-sizes-path=\"%" PRId64 "\"><figcaption><b>#%" PRId64 "</b> <code>", g->id, g->id);
  cp_hpath(f, g->path);
  fputs("</code></figcaption>\n", f);
  cp_sizes_chart(f, s, g, c);
  fputs("<table class=\"paths\"><thead><tr><th>size</th><th>calls</th><th>samples</th><th>GPU time</th>"
        "<th>GPU/call</th><th>bus BW</th></tr></thead><tbody>\n", f);
  for (unsigned k = 0; k < CP_GCLS; k++) {
    if (!c[k].calls && !c[k].samples) continue;
    cp_size_row r;
    cp_size_row_of(s, g, k, &c[k], &r);
    char sz[32], v[64], shown[64];
    cp_size_text(r.lo, sz, sizeof sz);
    fprintf(f, "<tr data-lo=\"%" PRIu64 "\"><td>%s</td>", r.lo, sz);
    snprintf(v, sizeof v, "%" PRIu64, c[k].calls);
    cp_num_cell(f, "calls", v, v);
    snprintf(v, sizeof v, "%" PRIu64, c[k].samples);
    cp_num_cell(f, "samples", v, v);
    snprintf(v, sizeof v, "%.0f", r.gpu_ns);
    cp_num_cell(f, "gpu_ns", r.gpu_ns >= 0 ? v : "", r.gpu_ns >= 0 ? cp_fmt_ns(r.gpu_ns, shown, sizeof shown) : "-");
    snprintf(v, sizeof v, "%.3f", r.call_ns);
    cp_num_cell(f, "call_ns", r.call_ns >= 0 ? v : "", r.call_ns >= 0 ? cp_fmt_ns(r.call_ns, shown, sizeof shown) : "-");
    snprintf(v, sizeof v, "%.6f", r.busbw);
    snprintf(shown, sizeof shown, "%.2f GB/s", r.busbw);
    cp_num_cell(f, "busbw_gbs", r.busbw >= 0 ? v : "", r.busbw >= 0 ? shown : "-");
    fputs("</tr>\n", f);
  }
  fputs("</tbody></table></figure>\n", f);
}

/* The message sizes (export_sizes.c) of the Coll/P2p paths with the most
 * GPU time (the summary's estimate), at most top of them. */
static void cp_sizes_section(FILE *f, const cp_summary *s, size_t top) {
  size_t *o = cp_sized_by_gpu(s);
  const size_t n = o ? s->nsized : 0;
  if (n) {
    fprintf(f, "<h2 id=\"sizes\">Message sizes: the %zu Coll/P2p paths with the most GPU time</h2>\n"
               "<p class=\"note\">Per log2 size class (calls of size to 2&times;size bytes per rank): calls "
               "summed over ranks, GPU samples, the class's GPU time, a typical call's (the periodic samples' "
               "mean, outliers left out) and the nccl-tests bus bandwidth it gives at the class's smallest "
               "size (exact for power-of-two sizes). <code>collprof-collate --sizes</code> lists every "
               "path.</p>\n<div class=\"charts\">\n", n < top ? n : top);
    for (size_t i = 0; i < n && i < top; i++) {
      const cp_sized *z = &s->sized[o[i]];
      cp_sizes_figure(f, s, &s->paths[z->id], z->c);
    }
    fputs("</div>\n", f);
  }
  free(o);
}

int cp_export_html(const cp_run *run, const cp_summary *s, const char *out, size_t top) {
  if (!top) top = 10;
  size_t *order = cp_summary_order_by_total(s);
  if (!order && s->npaths) {
    fprintf(stderr, "collprof: out of memory writing %s\n", out);
    return -1;
  }
  size_t ntop = top < s->npaths ? top : s->npaths;
  int64_t *val = cp_matrix(run, s, order, ntop);
  if (!val) {
    free(order);
    fprintf(stderr, "collprof: out of memory writing %s\n", out);
    return -1;
  }
  FILE *f = cp_export_open(out);
  if (!f) { free(order); free(val); return -1; }
  fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
             "<meta name=\"viewport\" content=\"width=device-width\">\n"
             "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
             "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n"
             "<title>collprof report: ");
  cp_h(f, s->command[0] ? s->command : s->outdir);
  fprintf(f, "</title>\n<style>%s</style></head>\n<body data-ready=\"0\">\n", cp_css);
  fprintf(f, "<h1>collprof report</h1>\n<p class=\"note\">collprof %s &middot; ", COLLPROF_VERSION);
  cp_h(f, s->outdir);
  fputs("</p>\n<h2 id=\"summary\">Run summary</h2>\n", f);
  cp_run_summary(f, s);
  fprintf(f, "<h2 id=\"paths\">Top %zu call paths by total time</h2>\n", ntop);
  fputs("<p class=\"note\">Times summed over ranks; min/max/avg are per-rank totals; "
        "imbalance as Vftrace (100&times;largest deviation from the average / average); "
        "% self of all paths' self time; ~ marks GPU times estimated from samples, &gt; the time of "
        "a path's sampled calls alone (only first-call samples, which may hold NCCL's set-up).</p>\n", f);
  cp_paths_table(f, s, order, ntop);
  fputs("<h2 id=\"ranks\">Time per rank of the top paths</h2>\n<p class=\"note\">One bar per "
        "rank: the rank's total time on the path (red: maximum, green: minimum, dashed: "
        "average). Hover a bar to see the same rank in every chart.</p>\n<div class=\"charts\">\n", f);
  for (size_t t = 0; t < ntop; t++) cp_chart(f, run, &s->paths[order[t]], &val[t * run->nranks]);
  fputs("</div>\n", f);
  cp_sizes_section(f, s, top);
  fprintf(f, "<script>%s</script>\n</body></html>\n", cp_js);
  free(order);
  free(val);
  return cp_export_close(f, out);
}
