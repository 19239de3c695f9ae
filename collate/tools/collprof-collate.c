/*
 * collprof-collate.c — offline collation: `collprof-collate [options] DIR`
 * reads DIR/rank*.jsonl (else DIR/pid*.jsonl) and writes DIR/summary.log
 * and DIR/summary.json with the same merge, reduction and writer code as
 * the online MPI collation (collate/), so for one run both agree number
 * for number.  Also the exporters (export.h, written in export_*.c):
 * --chrome, --folded, --html, --sizes.
 */
#include "collate_run.h"
#include "rankfile_read.h"
#include "report.h"
#include "export.h"
#include "collprof.h"
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f,
    "usage: collprof-collate [options] DIR\n"
    "Collate the per-rank files of a collprof run (DIR/rank*.jsonl, else\n"
    "DIR/pid*.jsonl) into DIR/summary.log and DIR/summary.json.\n\n"
    "  --chrome FILE     also write a Chrome trace-event JSON file (Perfetto)\n"
    "  --folded FILE     also write folded stacks (flamegraph.pl, speedscope)\n"
    "  --html FILE       also write a self-contained HTML report\n"
    "  --sizes FILE      also write the Coll/P2p paths' calls, GPU time and\n"
    "                    bandwidth per message size, over all ranks\n"
    "  --top N           paths shown in the HTML report (default 10)\n"
    "  --rank-logs SPEC  also write DIR/rank<R>.log: all, none (default), or 0,3-5\n"
    "  --hash-bits N     truncate path hashes to N bits (tests; default\n"
    "                    COLLPROF_HASH_BITS, else 64)\n"
    "  --no-summary      do not (re)write summary.log / summary.json\n"
    "  -q, --quiet       print nothing on success\n"
    "  -h, --help        this text\n"
    "  -V, --version     print the version\n"
    "Exit status: 0 success, 1 no rank files or a write failed, 2 bad usage.\n");
}

int main(int argc, char **argv) {
  const char *chrome = NULL, *folded = NULL, *html = NULL, *sizes = NULL, *rank_logs = NULL;
  int hash_bits = -1, quiet = 0, no_summary = 0;
  size_t top = 0;
  static const struct option opts[] = {
    {"chrome", required_argument, 0, 'c'}, {"folded", required_argument, 0, 'f'},
    {"html", required_argument, 0, 'H'}, {"top", required_argument, 0, 't'},
    {"sizes", required_argument, 0, 's'},
    {"rank-logs", required_argument, 0, 'r'}, {"hash-bits", required_argument, 0, 'b'},
    {"no-summary", no_argument, 0, 'n'},
    {"quiet", no_argument, 0, 'q'}, {"help", no_argument, 0, 'h'}, {"version", no_argument, 0, 'V'},
    {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "qhV", opts, NULL)) != -1) {
    char *end;
    switch (c) {
      case 'c': chrome = optarg; break;
      case 'f': folded = optarg; break;
      case 'H': html = optarg; break;
      case 's': sizes = optarg; break;
      case 'r': rank_logs = optarg; break;
      case 'n': no_summary = 1; break;
      case 't': top = strtoul(optarg, &end, 10);
        if (*end || !*optarg) { fprintf(stderr, "collprof-collate: bad --top '%s'\n", optarg); return 2; }
        break;
      case 'b': hash_bits = (int)strtol(optarg, &end, 10);
        if (*end || hash_bits < 1 || hash_bits > 64) {
          fprintf(stderr, "collprof-collate: --hash-bits wants 1..64, not '%s'\n", optarg); return 2;
        }
        break;
      case 'q': quiet = 1; break;
      case 'h': usage(stdout); return 0;
      case 'V': printf("collprof-collate %s\n", COLLPROF_VERSION); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (optind != argc - 1) { usage(stderr); return 2; }
  const char *dir = argv[optind];
  if (hash_bits < 0) hash_bits = cp_hash_bits_env();

  cp_run run;
  int n = cp_run_read(dir, &run);
  if (n < 0) return 1;
  if (n == 0) {
    fprintf(stderr, "collprof-collate: no rank*.jsonl or pid*.jsonl files in %s\n", dir);
    cp_run_free(&run);
    return 1;
  }
  cp_summary s;
  if (cp_collate_run(&run, hash_bits, &s) != 0) {
    fprintf(stderr, "collprof-collate: out of memory\n");
    cp_run_free(&run);
    return 1;
  }
  int rc = 0;
  if (!no_summary) {
    if (cp_write_summaries(&s, dir) != 0) rc = 1;
    else if (!quiet) printf("collprof: summary of %d ranks in %s/summary.log\n", n, dir);
  }
  for (size_t i = 0; rank_logs && i < run.nranks; i++) {
    if (!cp_rank_log_wanted(rank_logs, run.ranks[i].rank)) continue;
    char p[8192];
    snprintf(p, sizeof p, "%s/rank%d.log", dir, run.ranks[i].rank);
    if (cp_write_rank_log(&run.ranks[i], p) != 0) rc = 1;
  }
  if (chrome && cp_export_chrome(&run, &s, chrome) != 0) rc = 1;
  if (folded && cp_export_folded(&s, folded) != 0) rc = 1;
  if (html && cp_export_html(&run, &s, html, top) != 0) rc = 1;
  if (sizes && cp_export_sizes(&s, sizes) != 0) rc = 1;
  cp_summary_free(&s);
  cp_run_free(&run);
  return rc;
}
