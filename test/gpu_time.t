#!/bin/bash
# gpu_time.t — test/gpu/gpu_time.py on a made-up sweep and rank trace: a
# Coll's GPU span is its KernelCh's latest stop minus their earliest start,
# spans are grouped by nccl-tests size and set beside the sweep's
# CUDA-event time, the median judged within 20%; each call path's first
# sampled call (a first-call sample, its kernel holding set-up) is left
# out, as the summary keeps first-call samples apart.
. "$(dirname "$0")/tap.sh"
command -v python3 >/dev/null 2>&1 || skip_all "no python3"
S=$TOP/test/gpu/gpu_time.py
cat >"$T/sweep.json" <<'J'
{"nranks": 2, "gpuBound": true, "results": [
 {"op": "allreduce", "bytes": 1048576, "time_us": 14.0, "spin_us": 8000, "issue_us": 2000},
 {"op": "allreduce", "bytes": 2097152, "time_us": 28.0, "spin_us": 8000, "issue_us": 2000},
 {"op": "allgather", "bytes": 1048576, "time_us": 10.0, "spin_us": 8000, "issue_us": 2000}]}
J
# coll FILE ADDR TS FUNC COUNT DATATYPE SEQ SPAN_US PATH: a Coll of 2 channels, its
# KernelCh's GPU times SPAN_US apart (channel 1 starts 0.1 us late and
# stops first)
coll() {
  local f=$1 a=$2 ts=$3 fn=$4 cnt=$5 dt=$6 seq=$7 sp=$8 path=$9
  local g0=$(( 1800000000000000000 + ts * 1000 ))
  local g1=$(python3 -c "print($g0 + int($sp * 1000))")
  printf '{"recordType":"event","type":"ncclProfileColl","func":"%s","commId":"7","rank":0,"start":{"ts":%s},"stop":{"ts":%s},"eventAddr":"%s","path":%s,"details":{"func":"%s","seq":%s,"count":%s,"datatype":"%s","channels":2}}\n' \
    "$fn" "$ts" "$((ts + 5))" "$a" "$path" "$fn" "$seq" "$cnt" "$dt" >>"$f"
  printf '{"recordType":"event","type":"ncclProfileKernelCh","start":{"ts":%s},"stop":{"ts":%s},"parentObj":"%s","details":{"channelId":0,"gpuStart":%s,"gpuStop":%s}}\n' \
    "$((ts + 20))" "$((ts + 40))" "$a" "$g0" "$g1" >>"$f"
  printf '{"recordType":"event","type":"ncclProfileKernelCh","start":{"ts":%s},"stop":{"ts":%s},"parentObj":"%s","details":{"channelId":1,"gpuStart":%s,"gpuStop":%s}}\n' \
    "$((ts + 21))" "$((ts + 41))" "$a" "$((g0 + 100))" "$((g1 - 500))" >>"$f"
}
R=$T/rank0.jsonl
# the process's first call, unsampled (its Coll recorded, no KernelCh)
printf '{"recordType":"event","type":"ncclProfileColl","func":"AllReduce","commId":"7","rank":0,"start":{"ts":500},"stop":{"ts":505},"eventAddr":"0xa0","path":3,"details":{"func":"AllReduce","seq":0,"count":262144,"datatype":"ncclFloat32","channels":2}}\n' >"$R"
coll "$R" 0xa1 1000 AllReduce 262144 ncclFloat32 1 1289.0 3   # the path's first sampled call
coll "$R" 0xa2 2000 AllReduce 262144 ncclFloat32 17 13.0 3
coll "$R" 0xa3 3000 AllReduce 262144 ncclFloat32 33 15.0 3
coll "$R" 0xa4 4000 AllReduce 524288 ncclFloat32 230 27.0 3
coll "$R" 0xa5 5000 AllReduce 524288 ncclFloat32 246 29.0 3
# another path: its first sampled call (forced) left out too; 1 MiB by
# nccl-tests: 524288 x 2 ranks
coll "$R" 0xa7 5500 AllGather 524288 ncclInt8 401 25.0 5
coll "$R" 0xa6 6000 AllGather 524288 ncclInt8 430 6.0 5
python3 "$S" "$T/sweep.json" "$R" >"$T/out" 2>&1
rc=$?
sed 's/^/# /' "$T/out"
row() { grep "^  $1 *$2 " "$T/out" | tr -s ' ' | cut -d' ' -f4-; }
is "$(row allreduce 1048576)" "2 14.00 14.00 14.00 1.000" \
   "1 MiB all-reduce: 2 samples, mean and median 14 us (the first sampled call's 1,289 us left out)"
is "$(row allreduce 2097152)" "2 28.00 28.00 28.00 1.000" "2 MiB all-reduce: the latest stop minus the earliest start"
is "$(row allgather 1048576 | cut -d' ' -f1-5)" "1 6.00 6.00 10.00 0.600" \
   "all-gather: its size by nccl-tests (Coll bytes x ranks), outside 20% at 0.6"
grep -q "^  allgather .*> 20%" "$T/out"
is "$?" 0 "a size outside 20% is marked"
grep -q "first-call samples (each call path's first, left out): 2;.* compared: 3, outside 20%: 1" "$T/out"
is "$?" 0 "the summary line: two paths' first sampled calls left out, 3 sizes compared, 1 outside"
is "$rc" 1 "exit status 1 when a size is outside 20%"
# the same without the all-gather: all within, exit 0
grep -v 'AllGather\|"0xa[67]"' "$R" >"$T/r2"
python3 "$S" "$T/sweep.json" "$T/r2" >"$T/out2" 2>&1
is "$?" 0 "exit status 0 when every compared size is within 20%"
# without the 1,289 us sample, the next sampled call is the first
grep -v 'KernelCh.*"parentObj":"0xa1"' "$T/r2" >"$T/r3"
python3 "$S" "$T/sweep.json" "$T/r3" >"$T/out3" 2>&1
is "$(grep '^  allreduce *1048576 ' "$T/out3" | tr -s ' ' | cut -d' ' -f4-)" "1 15.00 15.00 14.00 1.071" \
   "the first sampled call is left out whichever call it is (here the 13 us one)"
done_testing
