/*
 * summary_json.c — summary.json: the numbers of summary.log for programs
 * (report.h).  Keys are documented in man/collprof.7.  Integers are exact
 * (ns, counts); hashes are "0x" + 16 hex digits; derived values are floats.
 */
#include "report.h"
#include "export.h"
#include "reduce.h"
#include "merge.h"
#include "collprof.h"
#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <string.h>

void cp_json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    switch (*p) {
      case '"': fputs("\\\"", f); break;
      case '\\': fputs("\\\\", f); break;
      case '\n': fputs("\\n", f); break;
      case '\r': fputs("\\r", f); break;
      case '\t': fputs("\\t", f); break;
      default:
        if (*p < 0x20) fprintf(f, "\\u%04x", *p); else fputc(*p, f);
    }
  }
  fputc('"', f);
}

/* "mask_frozen": one {reason, nranks, ranks} per reason, ranks listed one
 * by one (programs select a rank with a plain membership test). */
static void mask_frozen(FILE *f, const cp_summary *s) {
  fprintf(f, "\"mask_frozen\":[");
  for (size_t i = 0; i < s->nfrozen; i++) {
    const cp_frozen *z = &s->frozen[i];
    fprintf(f, "%s{\"reason\":", i ? "," : "");
    cp_json_str(f, z->reason);
    fprintf(f, ",\"nranks\":%" PRIu64 ",\"ranks\":[", z->nranks);
    int first = 1;
    for (size_t j = 0; j < z->nranges; j++)
      for (int64_t r = z->ranges[j].lo; r <= z->ranges[j].hi; r++, first = 0)
        fprintf(f, "%s%" PRId64, first ? "" : ",", r);
    fprintf(f, "]}");
  }
  fprintf(f, "],\n");
}

/* doubles: finite, fixed precision, same text online and offline */
static void num(FILE *f, double v) {
  if (v != v || v > 1e300 || v < -1e300) v = 0;
  fprintf(f, "%.6f", v);
}

int cp_write_summary_json(const cp_summary *s, const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) { fprintf(stderr, "collprof: cannot write %s: %s\n", path, strerror(errno)); return -1; }
  char t0[64], t1[64], mask[256];
  cp_iso_time(s->agg.start_wall_min_ns, t0, sizeof t0);
  cp_iso_time(s->agg.end_wall_max_ns, t1, sizeof t1);
  cp_mask_names(s->event_mask, mask, sizeof mask);
  const cp_agg *a = &s->agg;

  fprintf(f, "{\n\"tool\":\"collprof\",\"version\":\"%s\",\n\"command\":", COLLPROF_VERSION);
  cp_json_str(f, s->command);
  fprintf(f, ",\n\"startWall\":\"%s\",\"endWall\":\"%s\",\n", t0, t1);
  fprintf(f, "\"ranks\":%d,\"ranksReported\":%" PRIu64 ",\"ranksWithNccl\":%" PRIu64 ",\n",
          s->world_size, a->ranks_reported, a->ranks_with_nccl);
  fprintf(f, "\"hosts\":[");
  for (size_t i = 0; i < s->nhosts; i++) {
    fprintf(f, "%s{\"host\":", i ? "," : "");
    cp_json_str(f, s->hosts[i].name);
    fprintf(f, ",\"ranks\":%" PRIu64 "}", s->hosts[i].ranks);
  }
  fprintf(f, "],\n\"ncclVersion\":%d,\"eventMask\":%u,\"eventMaskNames\":\"%s\",\n", a->nccl_version,
          s->event_mask, mask);
  fprintf(f, "\"runtime_ns\":%" PRIu64 ",\"runtimeRank\":%d,\"events_recorded\":%" PRIu64
             ",\"events_counted\":%" PRIu64 ",\"overhead_ns\":%" PRIu64 ",\"overhead_insitu_ranks\":%" PRIu64
             ",\"overhead_borrowed_ranks\":%" PRIu64 ",\"overhead_borrowed_ns_per_event\":%.1f"
             ",\"cost_callbacks\":%" PRIu64 ",\"cost_windows\":%" PRIu64 ",\"cost_window_ns\":%" PRIu64
             ",\"cost_span_ns\":%" PRIu64 ",\"cost_setup_ns\":%" PRIu64 ",\"overhead_share\":%.6g,\"overhead_err_ns\":%.0f,\"overhead_err_unknown_ranks\":%" PRIu64 ",\"memory_bytes\":%" PRIu64 ",\"memory_max_bytes\":%" PRIu64
             ",\n\"unterminated\":%" PRIu64 ",\"blacklist_evictions\":%" PRIu64 ",\"events_pxn\":%" PRIu64
             ",\"unknown_parent\":%" PRIu64 ",\"trace_dropped\":%" PRIu64 ",\"bad_calls\":%" PRIu64
             ",\"gpu_sampled_calls\":%" PRIu64 ",\"gpu_samples_dropped\":%" PRIu64
             ",\"gpu_samples_deferred\":%" PRIu64 ",\"gpu_launches_timed\":%" PRIu64
             ",\"gpu_launches_unattributed\":%" PRIu64 ",\"gpu_launches_skipped\":%" PRIu64
             ",\"gpu_launches_unread\":%" PRIu64 ",\"gpu_launches_idle\":%" PRIu64 ",\n",
          a->runtime_max_ns, a->runtime_max_rank, a->events_recorded, a->events_counted, a->overhead_ns,
          a->overhead_insitu_ranks, a->overhead_borrowed ? a->fallback_ranks : 0,
          a->overhead_borrowed ? cp_agg_overhead_ns_per_event(a) : 0.0, a->cost_callbacks, a->cost_windows, a->cost_window_ns, a->cost_span_ns,
          a->cost_setup_ns, fmax(cp_agg_overhead_share(a), 0.0), sqrt(a->cost_err_var), a->cost_err_unknown,
          a->memory_bytes,
          a->memory_max_bytes, a->unterminated, a->blacklist_evictions, a->events_pxn,
          a->unknown_parent, a->trace_dropped, a->bad_calls, a->gpu_sampled_calls,
          a->gpu_samples_dropped, a->gpu_samples_deferred, a->gpu_launches_timed, a->gpu_launches_unattributed,
          a->gpu_launches_skipped, a->gpu_launches_unread, a->gpu_launches_idle);
  mask_frozen(f, s);
  fprintf(f, "\"self_total_ns\":%" PRIu64 ",\"hashBits\":%d,\"hashCollisions\":%zu,\n\"collisions\":[",
          s->self_total_ns, s->hash_bits, s->ncollisions);
  int first = 1;
  for (size_t i = 0; i < s->npaths; i++) {
    if (!s->paths[i].collides) continue;
    fprintf(f, "%s{\"hash\":\"0x%016" PRIx64 "\",\"id\":%" PRId64 ",\"path\":", first ? "" : ",",
            s->paths[i].hash, s->paths[i].id);
    cp_json_str(f, s->paths[i].path);
    fputc('}', f);
    first = 0;
  }
  fprintf(f, "],\n\"comms\":[");
  for (size_t i = 0; i < s->ncomms; i++) {
    const cp_comm_sum *c = &s->comms[i];
    fprintf(f, "%s\n {\"commId\":\"%" PRIu64 "\",\"commName\":", i ? "," : "", c->comm_id);
    cp_json_str(f, c->name);
    fprintf(f, ",\"nranks\":%d,\"nNodes\":%d,\"reported\":%" PRIu64 ",\"events\":%" PRIu64 "%s}",
            c->nranks, c->nnodes, c->members, c->events,
            c->nranks == 1 ? ",\"unprofiled\":\"" CP_ONE_RANK_WHY "\"" : "");
  }
  fprintf(f, "],\n\"paths\":[");
  for (size_t i = 0; i < s->npaths; i++) {
    const cp_gpath *p = &s->paths[i];
    cp_pstat whole;
    const cp_pstat *st = cp_gpath_pstat(p, &whole);
    cp_gderived d; cp_gpath_derive(s, p, &d);
    fprintf(f, "%s\n {\"id\":%" PRId64 ",\"path\":", i ? "," : "", p->id);
    cp_json_str(f, p->path);
    fprintf(f, ",\"hash\":\"0x%016" PRIx64 "\",\"leafType\":\"%s\",\"leafFunc\":", p->hash,
            cp_type_long_name(p->leaf_type));
    cp_json_str(f, p->leaf_func);
    fprintf(f, ",\"calls\":%" PRIu64 ",\"nranks\":%u,\"total_ns\":%" PRIu64 ",\"self_ns\":%" PRIu64
               ",\"min_ns\":%" PRIu64 ",\"min_rank\":%d,\"max_ns\":%" PRIu64 ",\"max_rank\":%d,\"avg_ns\":",
            st->calls, st->nranks, st->total_ns, st->self_ns, st->tmin_ns, st->tmin_rank, st->tmax_ns,
            st->tmax_rank);
    num(f, d.avg_ns);
    fprintf(f, ",\"imbalance_pct\":"); num(f, d.imbalance_pct);
    fprintf(f, ",\"imbalance_rank\":%d,\"self_pct\":", d.imbalance_rank); num(f, d.self_pct);
    fprintf(f, ",\"call_avg_ns\":"); num(f, d.call_avg_ns);
    fprintf(f, ",\"event_min_ns\":%" PRIu64 ",\"event_max_ns\":%" PRIu64 ",\"bytes\":%" PRIu64
               ",\"states\":%" PRIu64 ",\"unterminated\":%" PRIu64,
            st->calls > st->untimed_calls ? st->ev_min_ns : 0, st->ev_max_ns, st->bytes, st->states,
            st->unterminated);
    if (st->untimed_calls)   /* host sampling: total/self are estimates */
      fprintf(f, ",\"untimed_calls\":%" PRIu64 ",\"times_estimated\":true", st->untimed_calls);
    if (st->unseen_calls)   /* lean calls: calls (and states) are estimates */
      fprintf(f, ",\"unseen_calls\":%" PRIu64 ",\"calls_estimated\":true", st->unseen_calls);
    if (st->gpu_samples || st->gpu_ns) {
      fprintf(f, ",\"gpu_ns\":%" PRIu64 ",\"gpu_samples\":%" PRIu64 ",\"gpu_first_ns\":%" PRIu64
                 ",\"gpu_first_samples\":%" PRIu64 ",\"gpu_est_ns\":",
              st->gpu_ns, st->gpu_samples, st->gpu_first_ns, st->gpu_first_samples);
      num(f, d.gpu_est_ns);
      fprintf(f, ",\"gpu_class_ns\":%" PRIu64 ",\"gpu_class_calls\":%" PRIu64 ",\"gpu_outliers\":%" PRIu64,
              st->gpu_est_ns, st->gpu_est_calls, st->gpu_outliers);
      fprintf(f, ",\"gpu_call_ns\":"); num(f, d.gpu_call_ns);
      fprintf(f, ",\"gpu_exact\":%s", d.gpu_exact ? "true" : "false");
      if (d.gpu_first_only) fprintf(f, ",\"gpu_first_only\":true");
      else if (!d.gpu_exact) fprintf(f, ",\"gpu_borrowed_calls\":%" PRIu64, d.gpu_borrowed_calls);
    }
    if (st->gpu_launch_samples) {
      fprintf(f, ",\"gpu_launch_ns\":%" PRIu64 ",\"gpu_launch_samples\":%" PRIu64 ",\"gpu_launch_call_ns\":",
              st->gpu_launch_ns, st->gpu_launch_samples);
      num(f, d.launch_call_ns);
      fprintf(f, ",\"gpu_launch_est_ns\":");
      num(f, d.launch_est_ns);
      fprintf(f, ",\"gpu_launch_calls\":%" PRIu64, st->gpu_launch_calls);
    }
    if (d.bw_valid) {
      fprintf(f, ",\"algbw_gbs\":"); num(f, d.algbw_gbs);
      fprintf(f, ",\"busbw_gbs\":"); num(f, d.busbw_gbs);
    }
    const cp_size_sum *cls = cp_summary_sizes(s, (uint64_t)i);
    if (cls) {   /* per message-size class, as collprof-collate --sizes */
      fprintf(f, ",\"sizes\":");
      cp_size_json(f, s, p, cls);
    }
    fprintf(f, ",\"collision\":%s}", p->collides ? "true" : "false");
  }
  fprintf(f, "],\n\"config\":{\"rank\":%d,\"eventMask\":%u,\"gpuSample\":%d,\"gpuSampleSmall\":%d,"
             "\"gpuSampleSmallBytes\":%" PRIu64 ",\"traceOn\":%s,\"periods\":",
          s->config_rank, s->event_mask, s->gpu_sample, s->gpu_sample_small, s->gpu_sample_small_bytes,
          s->trace_on ? "true" : "false");
  cp_json_str(f, s->periods);
  if (s->gpu_sample_delay_ms >= 0) fprintf(f, ",\"gpuSampleDelayMs\":%d", s->gpu_sample_delay_ms);
  else fprintf(f, ",\"gpuSampleDelayMs\":null");
  fprintf(f, ",\"gpuSampleDelayAuto\":%s", s->gpu_sample_delay_auto ? "true" : "false");
  fprintf(f, ",\"windows\":");
  cp_json_str(f, s->windows);
  fprintf(f, ",\"perEventCostNs\":"); num(f, s->per_event_cost_ns);
  fprintf(f, ",\"hashBits\":%d},\n", s->hash_bits);

  const cp_collation_info *c = &s->coll;
  fprintf(f, "\"collation\":{\"mode\":\"%s\",\"rounds\":%d,\"ranks\":%d,\"wall_ns\":%" PRIu64
             ",\"global_paths\":%zu,\"global_set_bytes\":%" PRIu64 ",\"max_recv_bytes\":%" PRIu64
             ",\"max_recv_rank\":%d",
          c->online ? "online" : "offline", c->rounds, c->nranks, c->wall_ns, s->npaths,
          c->global_set_bytes, c->max_recv_bytes, c->max_recv_rank);
  if (c->bytes_sent && c->bytes_recv) {
    fprintf(f, ",\n \"bytes_sent\":[");
    for (int i = 0; i < c->nranks; i++) fprintf(f, "%s%" PRIu64, i ? "," : "", c->bytes_sent[i]);
    fprintf(f, "],\n \"bytes_recv\":[");
    for (int i = 0; i < c->nranks; i++) fprintf(f, "%s%" PRIu64, i ? "," : "", c->bytes_recv[i]);
    fprintf(f, "]");
  }
  fprintf(f, "}\n}\n");
  int bad = ferror(f);
  if (fclose(f) || bad) { fprintf(stderr, "collprof: error writing %s\n", path); return -1; }
  return 0;
}
