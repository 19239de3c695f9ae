#!/usr/bin/env bash
# sizes_export.t — collprof-collate --sizes (collate/export_sizes.c): the
# Coll/P2p paths per message-size class over all ranks.  Replays without
# MPI (one process per capture file, collated offline), checked by
# test/sizes_oracle.py against summary.json and, independently, against the
# event records of the rank files: calls per class, samples, outliers,
# GPU time per call and bandwidth.
. "$(dirname "$0")/tap.sh"
need_replay_collate
ORACLE=(python3 "$TOP/test/sizes_oracle.py")
export NCCL_PROFILE_EVENT_MASK=4095 COLLPROF_TRACE=1 COLLPROF_QUIET=1
unset COLLPROF_GPU_SAMPLE_SMALL COLLPROF_GPU_SAMPLE_SMALL_BYTES

# replay NAME GPU_SAMPLE CAPTURE...: one process per capture into $T/NAME,
# then collprof-collate --sizes $T/NAME.sizes
replay() {
  local name=$1 n=$2 f rc=0; shift 2
  rm -rf "$T/$name"
  for f in "$@"; do
    COLLPROF_GPU_SAMPLE=$n COLLPROF_OUTPUT_DIR=$T/$name "$REPLAY" --no-mpi --plugin "$PLUGIN" "$f" \
      >>"$T/$name.log" 2>&1 || rc=1
  done
  "$COLLATE" -q "$T/$name" --sizes "$T/$name.sizes" >>"$T/$name.log" 2>&1 || rc=1
  is "$rc" 0 "$name: replays and collprof-collate --sizes exit 0"
  [ $rc -eq 0 ] || sed 's/^/# /' "$T/$name.log" | tail -n 5
}
# oracle NAME MODE... DESCRIPTION
oracle() {
  local name=$1 desc=${*: -1} out rc
  out=$("${ORACLE[@]}" "$T/$name" "$T/$name.sizes" "${@:2:$#-2}" 2>&1)
  rc=$?
  is "$rc" 0 "$name: $desc${out:+ ($(head -n 1 <<<"$out" | cut -c1-60))}"
  [ $rc -eq 0 ] || sed 's/^/# /' <<<"$out" | head -n 8
}

# every call sampled: 4 ranks of all_gather over the network
replay ag4 1 "$FIX"/ag4_net/p*.jsonl
oracle ag4 summary "calls, samples and GPU time per path add up to summary.json's"
oracle ag4 trace gpu "calls, samples, outliers, GPU/call and bandwidth per class = the event records'"
# point-to-point (bus factor 1)
replay sendrecv 1 "$FIX"/sendrecv/p*.jsonl
oracle sendrecv summary "calls, samples and GPU time per path add up to summary.json's"
oracle sendrecv trace gpu "P2p: calls, samples, GPU/call and bandwidth per class = the event records'"
# one call in 4 sampled: the calls stay exact
replay nvlink4 4 "$FIX"/ar_nvlink/p*.jsonl
oracle nvlink4 summary sampled "sampled: calls and samples per path add up to summary.json's, GPU[s] per class by the rule"
oracle nvlink4 trace "sampled: calls per class = the event records'"
is "$(grep -c '^ID ' "$T/nvlink4.sizes")" "$(python3 -c '
import json, sys
print(sum(1 for p in json.load(open(sys.argv[1]))["paths"]
          if p.get("gpu_samples") and p["leafType"] in ("ncclProfileColl", "ncclProfileP2p")))' "$T/nvlink4/summary.json")" \
   "nvlink4: one table per sampled Coll/P2p path"

# as JSON (a name ending in .json): the same rows
for name in ag4 nvlink4; do
  "$COLLATE" -q --no-summary "$T/$name" --sizes "$T/$name.sizes.json" >/dev/null 2>&1
  ok "$name: --sizes FILE.json holds the text's rows" python3 - "$T/$name.sizes.json" "$T/$name.sizes" "$TOP/test" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[3])
import sizes_oracle
j, t = json.load(open(sys.argv[1])), sizes_oracle.parse(sys.argv[2])
assert j["tool"] == "collprof" and j["paths"], j.keys()
assert sorted(p["path"] for p in j["paths"]) == sorted(t), "paths differ"
for p in j["paths"]:
    rows = t[p["path"]]
    assert sorted(c["bytes"] for c in p["sizes"]) == sorted(rows), p["path"]
    for c in p["sizes"]:
        w = rows[c["bytes"]]
        assert (c["calls"], c["samples"], c["firstSamples"], c["outliers"]) == \
               (w["calls"], w["samples"], w["first"], w["outliers"]), (p["path"], c, w)
        for k, tk, sc, tol in (("gpuNs", "gpu_s", 1e9, 5.1e-7), ("callNs", "per_us", 1e3, 5.1e-4),
                               ("algbwGBs", "alg", 1, 5.1e-4), ("busbwGBs", "bus", 1, 5.1e-4)):
            assert (c[k] is None) == (w[tk] is None), (p["path"], c["bytes"], k)
            assert c[k] is None or abs(c[k] / sc - w[tk]) <= tol, (p["path"], c["bytes"], k, c[k], w[tk])
        assert c["borrowedCalls"] == w["lent"], (p["path"], c, w)
PY
  # the summary carries the same classes: summary.json per path, and
  # summary.log's "Message sizes" section (the paths with most GPU time)
  ok "$name: summary.json's sizes per path = the --sizes JSON's" python3 - "$T/$name.sizes.json" "$T/$name/summary.json" <<'PY'
import json, sys
j, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
want = {p["path"]: p["sizes"] for p in j["paths"]}
got = {p["path"]: p["sizes"] for p in s["paths"] if "sizes" in p}
assert want and got == want, (sorted(want), sorted(got))
PY
  ok "$name: summary.log's Message sizes section holds the --sizes rows of its paths" python3 - "$T/$name.sizes" "$T/$name/summary.log" <<'PY'
import sys
def tables(lines):
    out, cur = {}, None
    for l in lines:
        if l.startswith("ID "):
            cur = out.setdefault(l.strip(), [])
        elif cur is not None and "|" in l:
            cur.append(l.rstrip())
        elif cur is not None and not l.strip():
            cur = None
    return out
t = tables(open(sys.argv[1]).read().splitlines())
log = open(sys.argv[2]).read().split("Message sizes: the ", 1)
assert len(log) == 2, "no Message sizes section"
g = tables(log[1].split("\nGlobal paths", 1)[0].splitlines())
assert g and all(g[k] == t[k] for k in g), [k for k in g if g[k] != t.get(k)]
assert len(g) == min(len(t), 10), (len(g), len(t))
PY
done

# to stdout, and what cannot be written
"$COLLATE" -q --no-summary "$T/ag4" --sizes - >"$T/stdout.sizes" 2>"$T/stdout.err"
is "$?" 0 "--sizes -: exit 0"
ok "--sizes -: the same table on stdout" cmp -s "$T/stdout.sizes" "$T/ag4.sizes"
"$COLLATE" -q --no-summary "$T/ag4" --sizes "$T/no/such/dir/x" >/dev/null 2>"$T/bad.err"
is "$?" 1 "unwritable --sizes file: exit 1"
ok "unwritable --sizes file: one collprof: line names it" grep -qx "collprof: cannot write $T/no/such/dir/x: No such file or directory" "$T/bad.err"

# damaged gpuSizes entries are left out, the rest still read
mkdir -p "$T/damaged"
cp "$T"/ag4/pid*.jsonl "$T/damaged/"
f=$(ls "$T"/damaged/pid*.jsonl | head -n 1)
python3 - "$f" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
for i, l in enumerate(lines):
    r = json.loads(l)
    if r.get("recordType") == "path" and r.get("gpuSizes"):
        r["gpuSizes"][0] = [1, 2, 3]                    # not 7 numbers
        r["gpuSizes"].append([64, 1, 1, 5, 9, 0, 9])    # more first-call samples than samples
        # wild GPU times past INT64_MAX (the plugin writes them as they are;
        # jansson refuses such integers: read back as quoted decimals)
        r["gpuSizes"].append([1 << 30, 3, 1, 0, 2**64 - 616, 0, 2**64 - 616, 2**64 - 616, 3, 0, 0, 0])
        lines[i] = json.dumps(r, separators=(",", ":"))
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PY
"$COLLATE" -q --no-summary "$T/damaged" --sizes "$T/damaged.sizes" >/dev/null 2>&1
is "$?" 0 "damaged gpuSizes: collprof-collate exits 0"
is "$(grep -c '^ID ' "$T/damaged.sizes")" "$(grep -c '^ID ' "$T/ag4.sizes")" "damaged gpuSizes: every path still listed"
is "$(grep -cE '^ +1 GiB \| +3 \| +1 \|' "$T/damaged.sizes")" "$(grep -c '^ID ' "$T/ag4.sizes")" \
   "gpuSizes numbers past INT64_MAX: read, not dropped (one 1 GiB row per path)"
done_testing
