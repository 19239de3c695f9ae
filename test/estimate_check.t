#!/bin/bash
# estimate_check.t — the report of test/gpu/estimate_check.sh, on CPU: runs
# made up with known GPU times go through test/gpu/estimate_check.py, and
# its figures must be what the numbers say (measured medians and ranges,
# the estimate with the outlier clause and without it, their ratios and
# how many fall outside the measured range, the app's reference), so a GPU
# run's comparison can be trusted.
. "$(dirname "$0")/tap.sh"
command -v python3 >/dev/null || skip_all "no python3"
CHK=$TOP/test/gpu/estimate_check.py
D=$T/est

# run DIR US_PER_CALL OUTLIER_US: one run of 2 ranks; each rank's AllReduce
# path has 160 calls in one size class.  OUTLIER_US = 0: a measured run
# (every call sampled, each US_PER_CALL).  Otherwise a sampled run: 10
# periodic samples, 9 of US_PER_CALL and one of OUTLIER_US.  The app made
# 25 sweep calls of 50 us and 10 split calls of 100 us.
run() {
  mkdir -p "$1/prof" "$1/app"
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
d, us, out = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
for rank in (0, 1):
    if out == 0:
        sizes = [[1024, 160, 160, 0, int(160 * us * 1e3), 0, int(us * 1e3)]]
        samples = 160
    else:
        sizes = [[1024, 160, 10, 0, int((9 * us + out) * 1e3), 0, int(out * 1e3)]]
        samples = 10
    recs = [{"recordType": "path", "local": 3, "path": "GroupApi/CollApi:AllReduce/Coll:AllReduce",
             "calls": 160, "gpu_samples": samples, "gpuSizes": sizes},
            {"recordType": "path", "local": 4, "path": "GroupApi/CollApi:AllGather/Coll:AllGather",
             "calls": 160, "gpu_samples": 0}]
    with open("%s/prof/rank%d.jsonl" % (d, rank), "w") as f:
        f.write('{"recordType":"process"}\nnot json\n')
        for r in recs:
            f.write(json.dumps(r) + "\n")
json.dump({"iters": 20, "warmup": 5, "results": [{"op": "allreduce", "time_us": 50.0}],
           "split": {"allreduce": {"calls": 10, "us": 1000.0}}}, open(d + "/app/sweep.json", "w"))
PY
}
run "$D/m1" 100 0; run "$D/m2" 300 0; run "$D/m3" 200 0
run "$D/s1" 100 20000; run "$D/s2" 100 20000
python3 "$CHK" --json --measured "$D/m1" "$D/m2" "$D/m3" --sampled "$D/s1" "$D/s2" >"$D/r.json" 2>"$D/err"
is "$?" 0 "estimate_check.py runs"
get() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); v=eval(sys.argv[2], {'r': r}); print(round(v, 4) if isinstance(v, float) else v)" "$D/r.json" "$1"; }
is "$(get 'r["allreduce"]["measured"]["median"]')" "200.0" "measured: median of 100, 300, 200 us per call"
is "$(get '(r["allreduce"]["measured"]["min"], r["allreduce"]["measured"]["max"])')" "(100.0, 300.0)" "measured: range"
is "$(get 'r["allreduce"]["measured"]["samples_per_call"]')" "1.0" "measured: every call sampled"
# with the clause: 20000 us once, 100 us for the other 159 calls -> 224.375
is "$(get 'r["allreduce"]["clause"]["median"]')" "224.375" "with the clause: the long sample counted once"
is "$(get 'r["allreduce"]["clause"]["ratio"]')" "1.1219" "with the clause: ratio to the measured median"
is "$(get 'r["allreduce"]["clause"]["outside"]')" "0" "with the clause: inside the measured range"
# without: (9 x 100 + 20000) / 10 for all 160 calls -> 2090
is "$(get 'r["allreduce"]["plain"]["median"]')" "2090.0" "without the clause: the long sample stands for 16 calls"
is "$(get 'r["allreduce"]["plain"]["outside"]')" "2" "without the clause: both runs outside the measured range"
is "$(get 'r["allreduce"]["outliers"]')" "4" "the clause fired once per rank and run"
# (25 x 50 + 1000) / 35
is "$(get 'r["allreduce"]["ref"]')" "64.2857" "app reference: sweep and split calls"
is "$(get '"allgather" in r')" "False" "a path without GPU samples is left out"
python3 "$CHK" --measured "$D/m1" --sampled "$D/s1" >"$D/text" 2>&1
ok "text report: the estimate with the clause" grep -q "with clause .*ratio 2.244  outside 1/1  (clause fired 2 times)" "$D/text"
ok "text report: the estimate without it" grep -q "no clause .*ratio 20.900  outside 1/1" "$D/text"
python3 "$CHK" --measured "$D/m1" >/dev/null 2>&1
isnt_zero=$?
is "$([ $isnt_zero != 0 ] && echo usage)" "usage" "without --sampled: usage and a failing exit"
done_testing
