#!/bin/bash
# gpu_sampling.t — GPU sampling through the live activation mask, on CPU:
# captures replayed through libcollprof.so by collprof-replay (which
# emulates NCCL's live mask per API call) with the default mask and
# COLLPROF_GPU_SAMPLE=N; the number of sampled API calls (rank record
# gpuSampledCalls), the calls per Coll/P2p path that got KernelCh
# (gpu_samples), those of them that were first-call samples
# (gpu_first_samples) and the samples skipped while KernelCh were due
# (gpuSamplesDeferred) and the calls, samples and first-call samples per
# message-size class (gpuSizes) must be what gpu_sampling_oracle.py computes from
# the rule.
. "$(dirname "$0")/tap.sh"
REPLAY=$BIN/collprof-replay
PLUGIN=$LIB/libcollprof.so
[ -x "$REPLAY" ] && [ -e "$PLUGIN" ] || skip_all "collprof-replay or libcollprof.so not built"
command -v python3 >/dev/null || skip_all "no python3"

# plugin's answer: {"sampled_calls":..,"paths":{coll/p2p path: gpu_samples>0},
# "first":{coll/p2p path: gpu_first_samples>0}}
plugin_view() {
  python3 - "$1" <<'EOF'
import glob, json, os, sys
paths, first, sizes, sc, sk = {}, {}, {}, None, None
for f in glob.glob(os.path.join(sys.argv[1], "*.jsonl")):
    last = {}
    for line in open(f):
        r = json.loads(line)
        if r.get("recordType") == "path":
            last[r["local"]] = r
        elif r.get("recordType") == "rank":
            sc = r.get("gpuSampledCalls")
            sk = r.get("gpuSamplesDeferred")
    for p in last.values():
        if p["leafType"] in ("ncclProfileColl", "ncclProfileP2p") and p.get("gpu_samples", 0) > 0:
            paths[p["path"]] = p["gpu_samples"]
            if p.get("gpu_first_samples", 0) > 0:
                first[p["path"]] = p["gpu_first_samples"]
            sizes[p["path"]] = [s[:4] for s in p.get("gpuSizes", [])]
print(json.dumps({"sampled_calls": sc, "skipped": sk, "paths": dict(sorted(paths.items())),
                  "first": dict(sorted(first.items())), "sizes": dict(sorted(sizes.items()))}, sort_keys=True))
EOF
}

# mixed: ar_nvlink with later calls renamed (Broadcast from API call 30,
# AllGather from 55, AllReduce again from 70), so paths first appear
# mid-run and get forced, first-call samples; the renaming keeps every
# parent link and time.
mixed=$T/mixed.jsonl
python3 - "$FIX/ar_nvlink/p0.jsonl" >"$mixed" <<'PY'
import json, sys
k, func = -1, None
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("cb") == "start" and r.get("type") == 512:
        k += 1
        func = "Broadcast" if 30 <= k < 55 else "AllGather" if 55 <= k < 70 else None
    if func and r.get("cb") == "start" and r.get("type") in (512, 2):
        r["func"] = func
    print(json.dumps(r))
PY

for sc in ar_nvlink sendrecv ar_grouped mixed; do
  cap=$FIX/$sc/p0.jsonl
  [ "$sc" != mixed ] || cap=$mixed
  [ -s "$cap" ] || { skip "$sc: no capture"; continue; }
  # n: COLLPROF_GPU_SAMPLE, then small calls' factor and bytes ("-": the
  # defaults, 4 below 64 KiB); "4 1" is one in N for every call, "2 2 512"
  # puts the small/other boundary inside every capture's sweep
  for v in "1" "4" "16" "0" "4 1" "2 2 512"; do
    read -r n m b <<<"$v"
    out=$T/$sc.${v// /_}
    small=(); [ -z "$m" ] || small+=(COLLPROF_GPU_SAMPLE_SMALL=$m); [ -z "$b" ] || small+=(COLLPROF_GPU_SAMPLE_SMALL_BYTES=$b)
    env -u NCCL_PROFILE_EVENT_MASK -u COLLPROF_GPU_SAMPLE_SMALL -u COLLPROF_GPU_SAMPLE_SMALL_BYTES \
      "${small[@]}" COLLPROF_GPU_SAMPLE=$n COLLPROF_OUTPUT_DIR="$out" COLLPROF_QUIET=1 \
      COLLPROF_TRACE=0 "$REPLAY" --no-mpi --plugin "$PLUGIN" "$cap" >"$T/log" 2>&1
    got=$(plugin_view "$out" 2>&1)
    w1=$(env -u COLLPROF_GPU_SAMPLE_SMALL -u COLLPROF_GPU_SAMPLE_SMALL_BYTES "${small[@]}" \
      python3 "$TOP/test/gpu_sampling_oracle.py" "$cap" "$n" start)
    w2=$(env -u COLLPROF_GPU_SAMPLE_SMALL -u COLLPROF_GPU_SAMPLE_SMALL_BYTES "${small[@]}" \
      python3 "$TOP/test/gpu_sampling_oracle.py" "$cap" "$n" stop)
    if [ "$got" == "$w2" ] && [ "$w1" != "$w2" ]; then want=$w2; else want=$w1; fi
    is "$got" "$want" "$sc, COLLPROF_GPU_SAMPLE=$n${m:+, SMALL=$m}${b:+, SMALL_BYTES=$b}: sampled calls, skipped, paths with samples, first-call samples, calls and samples per size class"
    if [ "$v" = 4 ] || [ "$v" = 16 ]; then   # each rank's size-class estimate follows the rule
      est=$(python3 "$TOP/test/gpu_estimate_oracle.py" "$out" 2>&1)
      [[ "$est" =~ ^ok\ [1-9][0-9]*\ paths$ ]] || est="not: $est"
      [ "${est%% *}" = ok ] || diag "$est"
      is "${est%% *}" ok "$sc, COLLPROF_GPU_SAMPLE=$n: gpu_est_ns/calls/outliers per path as gpu_estimate_oracle.py recomputes them from gpuSizes"
    fi
  done
done
# The summary of a sampled run: summary.json's estimate follows from its own
# fields (the ranks' size-class parts, the pooled periodic mean for calls they
# do not cover), its borrowed calls are the rank files' plus those the pooled
# mean covers, and summary.log's GPU time table shows the same paths and
# numbers.
COLLATE=$BIN/collprof-collate
for c in mixed.16 ar_nvlink.4 sendrecv.2_2_512; do
  if [ ! -x "$COLLATE" ] || [ ! -d "$T/$c" ]; then skip "$c: no collprof-collate or no run"; continue; fi
  "$COLLATE" -q "$T/$c" >"$T/collate.log" 2>&1
  res=$(python3 - "$T/$c/summary.json" "$T/$c/summary.log" <<'PY'
import glob, json, os, sys
s = json.load(open(sys.argv[1]))
bad = []
want = {}
rb = {}   # path -> the ranks' borrowed calls (their final path records)
for f in glob.glob(os.path.join(os.path.dirname(sys.argv[1]), "*.jsonl")):
    last = {}
    for line in open(f):
        r = json.loads(line)
        if r.get("recordType") == "path":
            last[r["local"]] = r
    for r in last.values():
        rb[r["path"]] = rb.get(r["path"], 0) + r.get("gpu_borrowed_calls", 0)
for p in s["paths"]:
    if p["leafType"] not in ("ncclProfileColl", "ncclProfileP2p") or not p.get("gpu_samples"):
        continue
    S, Sf, G, F, C = p["gpu_samples"], p["gpu_first_samples"], p["gpu_ns"], p["gpu_first_ns"], p["calls"]
    first_only = Sf == S < C   # no periodic sample: the sampled calls alone, their mean
    if first_only:
        est, per = G, G / S
    else:
        pooled = (G - F) / (S - Sf) if S > Sf else G / S
        est = G if S >= C else p["gpu_class_ns"] + pooled * (C - min(p["gpu_class_calls"], C))
        per = est / C
    if abs(est - p["gpu_est_ns"]) > 1e-6 * max(1, est) or abs(per - p["gpu_call_ns"]) > 1e-6 * max(1, per):
        bad.append("%s: est %s per %s, fields say %s %s" % (p["path"], p["gpu_est_ns"], p["gpu_call_ns"], est, per))
    if p.get("gpu_first_only", False) != first_only:
        bad.append("%s: gpu_first_only %s, samples say %s" % (p["path"], p.get("gpu_first_only"), first_only))
    bor = None if first_only or S >= C else rb.get(p["path"], 0) + C - min(p["gpu_class_calls"], C)
    if p.get("gpu_borrowed_calls") != bor:
        bad.append("%s: gpu_borrowed_calls %s, rank files and pooled calls say %s" % (
            p["path"], p.get("gpu_borrowed_calls"), bor))
    want[p["path"]] = (C, S, Sf, p["gpu_outliers"], "-" if bor is None else bor,
                       ">" if first_only else "~" if not p["gpu_exact"] else " ",
                       "%.6f" % (est / 1e9), ("f" if first_only else "") + "%.3f" % (per / 1e3))
rows, on = {}, False
for line in open(sys.argv[2]):
    if line.startswith("GPU time"):
        on = True
        continue
    if on and not line.strip():
        break
    if on and "|" in line and not line.strip().startswith("Calls"):
        f = [x.strip() for x in line.split("|")]
        g = f[5]
        if not int(f[1]):   # a path with timed launches only (launch_timer.t)
            continue
        rows[f[9]] = (int(f[0]), int(f[1]), int(f[2]), int(f[3]), f[4] if f[4] == "-" else int(f[4]),
                      g[0] if g[0] in "~>" else " ", g.lstrip("~> "), f[6].replace(" ", ""))
if rows != want:
    bad.append("summary.log GPU table %s != summary.json %s" % (rows, want))
print("ok %d paths" % len(want) if not bad and want else "; ".join(bad) or "no sampled path")
PY
)
  is "$res" "ok $(python3 -c 'import json,sys; print(sum(1 for p in json.load(open(sys.argv[1]))["paths"] if p["leafType"] in ("ncclProfileColl","ncclProfileP2p") and p.get("gpu_samples")))' "$T/$c/summary.json") paths" \
    "$c: summary.json's GPU estimate follows from its fields; summary.log's GPU table agrees"
done
# First-call samples alone.  mixed with every call of one size (8 B): each
# path's first sample (call 0, or a new path's forced one) is of the only
# size class, so no class forces another, and one call in 256 below 1 MiB
# gives no periodic one in its 76 calls: no periodic mean to lend the
# other calls, so the summary gives the sampled calls' time, marked
# (collate/reduce.h, gpu_first_only).  mixed itself (a sweep) has a
# periodic sample per size class by class forcing (gpu_sample_rule.c), so none.
mono=$T/mono.jsonl
python3 -c 'import json,sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("cb") == "start" and r.get("type") in (512, 2): r["count"] = 2
    print(json.dumps(r))' "$mixed" >"$mono"
env -u NCCL_PROFILE_EVENT_MASK -u COLLPROF_GPU_SAMPLE_SMALL -u COLLPROF_GPU_SAMPLE_SMALL_BYTES COLLPROF_GPU_SAMPLE=16 \
  COLLPROF_OUTPUT_DIR="$T/mono.16" COLLPROF_QUIET=1 COLLPROF_TRACE=0 "$REPLAY" --no-mpi --plugin "$PLUGIN" "$mono" >"$T/log" 2>&1
if [ -x "$COLLATE" ] && "$COLLATE" -q "$T/mono.16" >"$T/collate.log" 2>&1; then
  fo='import json,sys; print(sorted(p["path"].split(":")[-1] for p in json.load(open(sys.argv[1]))["paths"] if p.get("gpu_first_only")))'
  is "$(python3 -c "$fo" "$T/mono.16/summary.json" 2>&1)" "['AllGather', 'AllReduce', 'Broadcast']" \
    "one size, N=16: the paths with first-call samples alone are marked gpu_first_only in summary.json"
  is "$(grep -c '^> f: only first-call samples' "$T/mono.16/summary.log")" 1 \
    "one size, N=16: summary.log says what > and f mean under the GPU table"
  is "$(python3 -c "$fo" "$T/mixed.16/summary.json" 2>&1)" "[]" \
    "mixed (a sweep), N=16: no path with first-call samples alone (class forcing)"
else
  skip "no collprof-collate"; skip "no collprof-collate"; skip "no collprof-collate"
fi
# The summary says which rule sampled the GPU: summary.log's configuration
# and summary.json's config, from the rank records.
for cw in "mixed.16|1 API call in 16, under 1048576 bytes 1 in 256|16 1048576" \
          "ar_nvlink.4_1|1 API call in 4|1 1048576" "sendrecv.2_2_512|1 API call in 2, under 512 bytes 1 in 4|2 512" \
          "ar_grouped.1|every API call|16 1048576"; do
  IFS='|' read -r c want wj <<<"$cw"
  if [ ! -x "$COLLATE" ] || [ ! -d "$T/$c" ]; then skip "$c: no collprof-collate or no run"; skip "$c"; skip "$c"; continue; fi
  [ -s "$T/$c/summary.log" ] || "$COLLATE" -q "$T/$c" >"$T/collate.log" 2>&1
  is "$(sed -n 's/^  GPU sampling: *//p' "$T/$c/summary.log")" "$want" "$c: summary.log says the GPU sampling rule: $want"
  kcw="on sampled API calls"; [ "$want" != "every API call" ] || kcw="on every API call"
  is "$(sed -n 's/^Event mask: .*; KernelCh //p' "$T/$c/summary.log")" "$kcw (GPU sampling)" \
    "$c: summary.log's event mask line says when KernelCh was on: $kcw"
  is "$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["config"]; print(c["gpuSampleSmall"], c["gpuSampleSmallBytes"])' \
      "$T/$c/summary.json" 2>&1)" "$wj" "$c: summary.json config gpuSampleSmall, gpuSampleSmallBytes = $wj"
done
# The start delay (COLLPROF_GPU_SAMPLE_DELAY_MS, src/start_delay.c).  Its
# default, auto: 100 ms, none for a process with one communicator at its
# first call.  ar4_threads: two application threads
# (a communicator each, both initialised before the first call) whose
# first calls came 3.4 ms apart; the second thread freezes the mask,
# which must find KernelCh off (with no delay the first call is a sample
# and the freeze finds it on: every call then runs with KernelCh).
# ar_nvlink --timed with 100 ms: one thread whose first call took 3 s
# (connection set-up), so the delay is over by its second call and
# sampling goes on.
frozen_view() {
  python3 -c 'import glob,json,sys
for f in glob.glob(sys.argv[1] + "/*.jsonl"):
    for l in open(f):
        r = json.loads(l)
        if r.get("recordType") == "rank": print("%s|%s|%s|%s" % (r.get("maskFrozen"), r.get("gpuSampledCalls"), r.get("gpuSampleDelayMs"), r.get("gpuSampleDelayAuto")))' "$1"
}
for dl in default 0; do
  out=$T/delay.thr.$dl
  if [ "$dl" = default ]; then
    env -u COLLPROF_GPU_SAMPLE_DELAY_MS COLLPROF_OUTPUT_DIR="$out" COLLPROF_QUIET=1 \
      "$REPLAY" --plugin "$PLUGIN" "$FIX"/ar4_threads/p0.jsonl >"$T/delay.log" 2>&1
  else
    COLLPROF_GPU_SAMPLE_DELAY_MS=$dl COLLPROF_OUTPUT_DIR="$out" COLLPROF_QUIET=1 \
      "$REPLAY" --plugin "$PLUGIN" "$FIX"/ar4_threads/p0.jsonl >"$T/delay.log" 2>&1
  fi
  want="NCCL calls from a second thread, KernelCh off|0|100|True"
  [ "$dl" = 0 ] && want="NCCL calls from a second thread, KernelCh on|100|0|False"
  is "$(frozen_view "$out")" "$want" "ar4_threads, start delay $dl: maskFrozen|gpuSampledCalls|gpuSampleDelayMs|gpuSampleDelayAuto"
done
if [ -x "$COLLATE" ]; then
  "$COLLATE" -q "$T/delay.thr.default" >"$T/collate.log" 2>&1
  ok "ar4_threads, default delay: summary.log names the freeze and what gives KernelCh back" \
    grep -q 'Event mask frozen on rank 0: NCCL calls from a second thread, KernelCh off (.*--gpu-sample 1 gives both' \
    "$T/delay.thr.default/summary.log"
  is "$(sed -n 's/^Event mask: .*; KernelCh //p' "$T/delay.thr.default/summary.log")" "on no API call (GPU sampling took none)" \
    "ar4_threads, default delay: summary.log's event mask line says KernelCh was on no call"
else
  skip "no collprof-collate"; skip "no collprof-collate"
fi
COLLPROF_GPU_SAMPLE_DELAY_MS=100 COLLPROF_OUTPUT_DIR="$T/delay.nv" COLLPROF_QUIET=1 \
  "$REPLAY" --timed --plugin "$PLUGIN" "$FIX"/ar_nvlink/p0.jsonl >"$T/delay.log" 2>&1
res=$(frozen_view "$T/delay.nv")
ok "ar_nvlink --timed, delay 100: not frozen, KernelCh sampled once the delay is over ($res)" \
  python3 -c 'import sys; f, n, d, a = sys.argv[1].split("|"); sys.exit(not (f == "" and int(n) >= 1 and d == "100" and a == "False"))' "$res"
# auto on one communicator (ar_nvlink, untimed: its 76 calls pass within
# 100 ms): no delay, only call 0 unsampled (its mask was read before the
# count), as gpu_sampling_oracle.py computes it
env -u COLLPROF_GPU_SAMPLE_DELAY_MS COLLPROF_TRACE=0 COLLPROF_OUTPUT_DIR="$T/delay.one.auto" COLLPROF_QUIET=1 \
  "$REPLAY" --no-mpi --plugin "$PLUGIN" "$FIX"/ar_nvlink/p0.jsonl >"$T/delay.log" 2>&1
one_auto=$(plugin_view "$T/delay.one.auto")
w1=$(env -u COLLPROF_GPU_SAMPLE_DELAY_MS python3 "$TOP/test/gpu_sampling_oracle.py" "$FIX"/ar_nvlink/p0.jsonl 16 start)
w2=$(env -u COLLPROF_GPU_SAMPLE_DELAY_MS python3 "$TOP/test/gpu_sampling_oracle.py" "$FIX"/ar_nvlink/p0.jsonl 16 stop)
if [ "$one_auto" == "$w2" ] && [ "$w1" != "$w2" ]; then want=$w2; else want=$w1; fi
is "$one_auto" "$want" "ar_nvlink, default (auto) delay, one communicator: no delay, call 0 unsampled, as the oracle says"
ok "...and samples from the second call on ($one_auto)" \
  python3 -c 'import json,sys; v = json.loads(sys.argv[1]); sys.exit(not (v["sampled_calls"] > 0 and v["first"]))' "$one_auto"
is "$(env -u COLLPROF_GPU_SAMPLE_DELAY_MS python3 "$TOP/test/gpu_sampling_oracle.py" "$FIX"/ar4_threads/p0.jsonl 16 2>&1)" \
  "gpu_sampling_oracle.py: 2 inits of 1 communicators at the first call: the start delay runs (time: not modeled)" \
  "the oracle: ar4_threads holds two ranks of one communicator at its first call (the delay runs)"
# ...and with a second communicator of its own, initialised before the first
# call and never used (one GPU per process with two communicators, as a
# process of a job with data- and tensor-parallel groups): no delay either
python3 - "$FIX"/ar_nvlink/p0.jsonl >"$T/two_comms.jsonl" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
first = json.loads(lines[0])
assert first["cb"] == "init"
other = dict(first, ctx="0x1", commId=str(int(first["commId"]) + 1), rank=0)
print(lines[0]); print(json.dumps(other))
for l in lines[1:]:
    print(l)
PY
env -u COLLPROF_GPU_SAMPLE_DELAY_MS COLLPROF_TRACE=0 COLLPROF_OUTPUT_DIR="$T/delay.two" COLLPROF_QUIET=1 \
  "$REPLAY" --no-mpi --plugin "$PLUGIN" "$T/two_comms.jsonl" >"$T/delay.log" 2>&1
w1=$(env -u COLLPROF_GPU_SAMPLE_DELAY_MS python3 "$TOP/test/gpu_sampling_oracle.py" "$T/two_comms.jsonl" 16 start)
is "$(plugin_view "$T/delay.two")" "$w1" "two communicators, one rank each, default delay: no delay, as the oracle says"
is "$(frozen_view "$T/delay.two" | cut -d'|' -f3,4)" "0|True" "...the rank record says the delay ran 0 ms, by the default rule"
is "$(frozen_view "$T/delay.one.auto")" "|$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["sampled_calls"])' "$one_auto")|0|True" \
  "ar_nvlink, auto: the rank record says the delay ran 0 ms, by the default rule"
if [ -x "$COLLATE" ]; then
  "$COLLATE" -q "$T/delay.nv" >"$T/collate.log" 2>&1
  is "$(sed -n 's/^  COLLPROF_GPU_SAMPLE_DELAY_MS: *//p' "$T/delay.nv/summary.log")" \
    "100 (no sample before 100 ms after the first NCCL call)" "summary.log gives the start delay"
  "$COLLATE" -q "$T/delay.one.auto" >"$T/collate.log" 2>&1
  is "$(sed -n 's/^  COLLPROF_GPU_SAMPLE_DELAY_MS: *//p' "$T/delay.one.auto/summary.log")" \
    "auto, 0 (no delay: one rank of each communicator at the first NCCL call)" "summary.log: auto, and why no delay ran"
  is "$(sed -n 's/^  COLLPROF_GPU_SAMPLE_DELAY_MS: *//p' "$T/delay.thr.default/summary.log")" \
    "auto, 100 (no sample before 100 ms after the first NCCL call: not one rank of each communicator, inited on one thread, then)" \
    "summary.log: auto with two communicators, the delay ran"
  # ...and says it is not used where N = 1 ignores it
  COLLPROF_GPU_SAMPLE_DELAY_MS=100 COLLPROF_GPU_SAMPLE=1 COLLPROF_OUTPUT_DIR="$T/delay.n1" COLLPROF_QUIET=1 \
    "$REPLAY" --no-mpi --plugin "$PLUGIN" "$FIX"/ar_nvlink/p0.jsonl >"$T/delay.log" 2>&1
  "$COLLATE" -q "$T/delay.n1" >"$T/collate.log" 2>&1
  is "$(sed -n 's/^  COLLPROF_GPU_SAMPLE_DELAY_MS: *//p' "$T/delay.n1/summary.log")" \
    "100 (not used: every API call sampled)" "summary.log: the start delay is not used with --gpu-sample 1"
  is "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["gpuSampleDelayMs"])' "$T/delay.nv/summary.json" 2>&1)" \
    "100" "summary.json config gpuSampleDelayMs"
  is "$(python3 -c 'import json,sys; c = json.load(open(sys.argv[1]))["config"]; print(c["gpuSampleDelayMs"], c["gpuSampleDelayAuto"])' "$T/delay.one.auto/summary.json" 2>&1)" \
    "0 True" "summary.json config gpuSampleDelayMs, gpuSampleDelayAuto with auto on one communicator"
else
  skip "no collprof-collate"; skip "no collprof-collate"; skip "no collprof-collate"
  skip "no collprof-collate"; skip "no collprof-collate"; skip "no collprof-collate"
fi
done_testing
