#!/bin/bash
# mpi_collate.t — the MPI collation end to end: real mpirun (Open MPI,
# oversubscribed) with libcollprof-mpi.so preloaded, collprof-replay
# replaying the shared captures (rank r replays file r mod nfiles).
# Expectations come from test/oracle.py (per-path event counts computed from
# the captures) and test/mpi_collate_check.py (reads the outputs on its own);
# neither shares code with collprof.
#   - 1, 2, 4, 8 ranks: calls per path = the captures' sums; global ids agree
#     in summary.json, summary.log, rank files, rank logs; every line parses;
#     rounds = ceil(log2 P); no rank receives more than 3x the global set;
#     min/max/avg/imbalance agree with the rank files
#   - different paths on different ranks, a rank without NCCL, several
#     communicators per process (ar4_threads), forced hash collisions
#   - Fortran (use mpi, use mpi_f08), MPI_Init_thread's provided
#   - a run without MPI_Finalize, collated offline; offline = online
#   - run counters (GPU samples taken, dropped, skipped, ...) = sums of the
#     rank records; frozen event masks (CUDA graph capture, second thread)
#     listed per reason with exactly the ranks whose rank record says so,
#     online and offline; a run without capture lists none
. "$(dirname "$0")/tap.sh"

[ -n "${SAN:-}" ] && skip_all "mpirun with a preloaded library is not run under sanitizers"
need_mpi_collate

# oracle per capture file, computed once
oracle() { # FILE -> path of its oracle json
  local o=$T/oracle_$(basename "$(dirname "$1")")_$(basename "$1" .jsonl).json
  [ -e "$o" ] || python3 "$TOP/test/oracle.py" "$1" >"$o"
  echo "$o"
}

# check_run NAME NP FILES...: the standard checks of a replay run
check_run() {
  local name=$1 np=$2; shift 2
  local os=() f
  for f in "$@"; do os+=("$(oracle "$f")"); done
  ok "$name: summary.json calls per path = captures" "${CHK[@]}" calls "$T/$name" $# "${os[@]}"
  ok "$name: global ids agree (summary.json, summary.log, rank files)" "${CHK[@]}" ids "$T/$name"
  ok "$name: every rank-file line parses" "${CHK[@]}" lines "$T/$name"
  ok "$name: rounds = ceil(log2 $np), receive <= 3x global set" "${CHK[@]}" collation "$T/$name" "$np"
  ok "$name: min/max/avg/imbalance = rank files" "${CHK[@]}" reduce "$T/$name"
  ok "$name: run counters and frozen masks = rank records" "${CHK[@]}" counters "$T/$name"
}

# frozen NAME: "rank:maskFrozen" per rank record, in rank order
frozen() {
  python3 -c 'import json,glob,sys
recs = [json.loads(l) for f in glob.glob(sys.argv[1] + "/*.jsonl") for l in open(f) if l.startswith("{\"recordType\":\"rank\"")]
print(" ".join("%d:%s" % (r["rank"], r["maskFrozen"].split(",")[0]) for r in sorted(recs, key=lambda r: r["rank"])))' "$T/$1"
}

# ---- 1, 2, 4, 8 ranks ----
AG=("$FIX"/ag4_net/p*.jsonl)
for np in 1 2 4 8; do
  extra=()
  [ $np -eq 2 ] && extra=(COLLPROF_RANK_LOGS=all)
  mpirun_case "np$np" $np "${extra[@]}" -- "$REPLAY" "${AG[@]}"
  check_run "np$np" $np "${AG[@]}"
done
ok "np2: rank0.log and rank1.log written" test -s "$T/np2/rank0.log" -a -s "$T/np2/rank1.log"
# without a graph capture or a second thread the mask never freezes
is "$(frozen np4)" "0: 1: 2: 3:" "np4: no rank record has maskFrozen"
is "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["mask_frozen"])' "$T/np4/summary.json")" "[]" \
   "np4: summary.json mask_frozen is empty"
ok "np4: summary.log has no frozen-mask line" bash -c "! grep -q 'Event mask frozen' '$T/np4/summary.log'"
# the one line on rank 0 (quiet off)
rm -rf "$T/loud"
COLLPROF_QUIET=0 COLLPROF_OUTPUT_DIR=$T/loud timeout 60 "${MPIRUN[@]}" -np 2 -x COLLPROF_OUTPUT_DIR -x COLLPROF_QUIET=0 \
  -x LD_PRELOAD="$MPILIB" "$REPLAY" "$FIX"/ar_nvlink/p*.jsonl >"$T/loud.out" 2>&1
is "$(grep -c "summary of 2 ranks in $T/loud/summary.log" "$T/loud.out")" 1 "rank 0 prints one line: where the summary is"

# ---- different paths on different ranks (P2p on rank 0, Coll on rank 1) ----
DIS=("$FIX/sendrecv/p0.jsonl" "$FIX/ar_net/p1.jsonl")
mpirun_case disjoint 2 -- "$REPLAY" "${DIS[@]}"
check_run disjoint 2 "${DIS[@]}"

# ---- several communicators per process ----
TH=("$FIX"/ar4_threads/p*.jsonl)
mpirun_case threads 2 -- "$REPLAY" "${TH[@]}"
check_run threads 2 "${TH[@]}"
is "$(python3 -c 'import json,sys; print(sum(c["reported"] for c in json.load(open(sys.argv[1]))["comms"]))' "$T/threads/summary.json")" \
   4 "threads: 4 NCCL ranks in the communicators table"

# ---- forced hash collisions ----
NV=("$FIX"/ar_net/p*.jsonl)
mpirun_case collide 2 COLLPROF_HASH_BITS=4 -- "$REPLAY" "${NV[@]}"
check_run collide 2 "${NV[@]}"
ok "collide: collisions kept apart and reported" "${CHK[@]}" collisions "$T/collide" 4
ok "collide: summary.log lists them" grep -q "Hash collisions: *[1-9]" "$T/collide/summary.log"

# ---- frozen event masks: CUDA graph capture on ranks 0, 1 and 4, a second
# calling thread on rank 2, neither on rank 3 (MPMD; sampling 1 in 16, so
# the mask would otherwise change) ----
rm -rf "$T/frozen"
FX=(-x COLLPROF_OUTPUT_DIR -x COLLPROF_QUIET -x COLLPROF_GPU_SAMPLE=16 -x NCCL_PROFILE_EVENT_MASK -x LD_PRELOAD="$MPILIB")
COLLPROF_OUTPUT_DIR=$T/frozen timeout 120 "${MPIRUN[@]}" "${FX[@]}" -np 2 "$REPLAY" --synthetic graph --count 300 : \
  "${FX[@]}" -np 1 "$REPLAY" --synthetic threads --threads 2 --count 300 : \
  "${FX[@]}" -np 1 "$REPLAY" "$FIX/ar_net/p0.jsonl" : \
  "${FX[@]}" -np 1 "$REPLAY" --synthetic graph --count 300 >"$T/frozen.out" 2>&1
is "$?" 0 "frozen: mpirun exits 0"
is "$(frozen frozen)" \
   "0:CUDA graph capture seen 1:CUDA graph capture seen 2:NCCL calls from a second thread 3: 4:CUDA graph capture seen" \
   "frozen: rank records say which ranks froze and why"
ok "frozen: counters and frozen masks in summary.json/summary.log = rank records" "${CHK[@]}" counters "$T/frozen"
ok "frozen: summary.log groups ranks 0-1,4 under one reason" grep -q "^  Event mask frozen on ranks 0-1,4: CUDA graph capture seen" "$T/frozen/summary.log"
mkdir -p "$T/off_frozen"
cp "$T/frozen"/rank*.jsonl "$T/off_frozen/"
"$COLLATE" -q "$T/off_frozen" 2>"$T/off_frozen.err"
ok "frozen: offline summary = online summary (all but run end)" "${CHK[@]}" same "$T/frozen" "$T/off_frozen"
ok "frozen: offline counters and frozen masks = rank records" "${CHK[@]}" counters "$T/off_frozen"

# ---- MPI programs without NCCL ----
mpicc -o "$T/init_thread" "$TOP/test/mpi/init_thread.c" 2>"$T/cc.err"
ok "init_thread.c builds" test -x "$T/init_thread"
# a rank without NCCL next to one with it (MPMD)
rm -rf "$T/nonccl"
# (Open MPI applies -x per application context: give it to both)
X=(-x COLLPROF_OUTPUT_DIR -x COLLPROF_QUIET -x COLLPROF_GPU_SAMPLE -x NCCL_PROFILE_EVENT_MASK -x LD_PRELOAD="$MPILIB")
COLLPROF_OUTPUT_DIR=$T/nonccl timeout 60 "${MPIRUN[@]}" "${X[@]}" -np 1 "$REPLAY" "$FIX/ar_nvlink/p0.jsonl" : \
  "${X[@]}" -np 1 "$T/init_thread" 0 >"$T/nonccl.out" 2>&1
is "$?" 0 "nonccl: mpirun exits 0"
echo '{"paths":{}}' >"$T/no_paths.json"
ok "nonccl: calls per path = the one capture" "${CHK[@]}" calls "$T/nonccl" 2 "$(oracle "$FIX/ar_nvlink/p0.jsonl")" "$T/no_paths.json"
ok "nonccl: global ids agree" "${CHK[@]}" ids "$T/nonccl"
ok "nonccl: reductions = rank files" "${CHK[@]}" reduce "$T/nonccl"
is "$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); print(s["ranks"], s["ranksWithNccl"], max(p["nranks"] for p in s["paths"]))' "$T/nonccl/summary.json")" \
   "2 1 1" "nonccl: 2 ranks, 1 used NCCL, no path counted on the other"
for lvl in 0 1 2 3; do
  want=$(timeout 30 "${MPIRUN[@]}" -np 1 "$T/init_thread" $lvl 2>/dev/null)
  got=$(COLLPROF_OUTPUT_DIR=$T/it$lvl timeout 30 "${MPIRUN[@]}" -np 1 -x COLLPROF_OUTPUT_DIR -x LD_PRELOAD="$MPILIB" \
        "$T/init_thread" $lvl 2>/dev/null)
  is "$got" "$want" "MPI_Init_thread level $lvl: provided as without the wrapper ($want)"
done

# ---- Fortran ----
if command -v mpif90 >/dev/null; then
  for prog in fortran_hello fortran_f08; do
    if mpif90 -o "$T/$prog" "$TOP/test/mpi/$prog.f90" 2>"$T/$prog.err"; then
      mpirun_case "run_$prog" 2 -- "$T/$prog"
      ok "$prog: finalized through the wrapper (summary, 2 rank files that parse)" \
        python3 -c 'import json,sys,os; d=sys.argv[1]; s=json.load(open(d+"/summary.json")); assert s["ranks"]==2 and s["collation"]["mode"]=="online"; [json.loads(l) for r in (0,1) for l in open(d+"/rank%d.jsonl"%r)]' "$T/run_$prog"
    else
      skip "$prog: mpif90 failed ($(head -n 1 "$T/$prog.err"))"
    fi
  done
else
  skip "no mpif90"
fi

# ---- no MPI_Finalize: per-process files, then offline collation ----
rm -rf "$T/nofin"
for f in "$FIX"/ar_grouped/p*.jsonl; do
  COLLPROF_OUTPUT_DIR=$T/nofin "$REPLAY" --no-mpi --plugin "$LIB/libcollprof.so" "$f" >/dev/null 2>"$T/nofin.err"
done
"$COLLATE" -q "$T/nofin" 2>"$T/nofin.collate.err"
is "$?" 0 "nofin: collprof-collate exits 0"
ok "nofin: calls per path = captures" "${CHK[@]}" calls "$T/nofin" 2 $(for f in "$FIX"/ar_grouped/p*.jsonl; do oracle "$f"; done)
ok "nofin: reductions = rank files" "${CHK[@]}" reduce "$T/nofin"
ok "nofin: run counters = rank records" "${CHK[@]}" counters "$T/nofin"
# without MPI: pid files (ranks given by the reader), one graph capture
rm -rf "$T/nofin_graph"
for a in "--synthetic graph --count 300" "$FIX/ar_net/p0.jsonl" "--synthetic graph --count 300"; do
  COLLPROF_GPU_SAMPLE=16 COLLPROF_OUTPUT_DIR=$T/nofin_graph "$REPLAY" --no-mpi --plugin "$LIB/libcollprof.so" $a \
    >/dev/null 2>>"$T/nofin_graph.err"
done
"$COLLATE" -q "$T/nofin_graph" 2>"$T/nofin_graph.collate.err"
is "$?" 0 "nofin_graph: collprof-collate exits 0"
ok "nofin_graph: counters and frozen masks = rank records" "${CHK[@]}" counters "$T/nofin_graph"
is "$(python3 -c 'import json,sys; print(sum(g["nranks"] for g in json.load(open(sys.argv[1]))["mask_frozen"]))' "$T/nofin_graph/summary.json")" \
   2 "nofin_graph: two processes listed as frozen"

# ---- fuzz: random misuse on 3 ranks (replay_synth_fuzz.c), then the
# collation at MPI_Finalize over thousands of random paths ----
mpirun_case fuzz 3 COLLPROF_FUZZ_SEED=3 -- "$REPLAY" --mpi --plugin "$LIB/libcollprof.so" --synthetic fuzz --threads 3 --count 20000
# (mpirun's output holds the MPI runtime's own lines too: on an H200 host
# a PMIx component's; only crashes and aborts are looked for there)
is "$(grep -iE 'segmentation|aborted|core dumped|exited on signal|sanitizer' "$T/fuzz.out" | head -n 3)" "" \
  "fuzz: no rank crashed or aborted"
ok "fuzz: summary.json and the rank files parse" python3 -c '
import json, sys
json.load(open(sys.argv[1]))
for f in sys.argv[2:]:
    for l in open(f, "rb"): json.loads(l)' "$T/fuzz/summary.json" "$T"/fuzz/rank*.jsonl
ok "fuzz: reductions = rank files" "${CHK[@]}" reduce "$T/fuzz"
ok "fuzz: run counters = rank records" "${CHK[@]}" counters "$T/fuzz"

# ---- the fuzz with MPI_Finalize called an eighth of the way, while its
# threads go on calling (a watchdog, a communicator destroyed after
# MPI_Finalize): the summary, the rank files written before and after the
# collation and at exit, and the offline collation all stop at
# MPI_Finalize; what came later is said on stderr (each rank's own file:
# what a rank prints as it exits, after MPI_Finalize, mpirun did not always
# pass on) ----
mpirun_case fuzz_fin 3 COLLPROF_FUZZ_SEED=5 COLLPROF_FUZZ_SHUTDOWN=mpi -- \
  sh -c 'exec "$@" 2>"$0.$OMPI_COMM_WORLD_RANK.err"' "$T/fuzz_fin" \
  "$REPLAY" --mpi --plugin "$LIB/libcollprof.so" --synthetic fuzz --threads 3 --count 20000
is "$(cat "$T/fuzz_fin.out" "$T"/fuzz_fin.*.err | grep -iE 'segmentation|aborted|core dumped|exited on signal|sanitizer' | head -n 3)" "" \
  "fuzz_fin: no rank crashed or aborted"
is "$(cat "$T"/fuzz_fin.*.err | grep -c 'fuzz: MPI_Finalize took')" 3 "fuzz_fin: every rank called MPI_Finalize while its threads ran"
ok "fuzz_fin: events after MPI_Finalize said on stderr" grep -q "NCCL events came after MPI_Finalize began" "$T"/fuzz_fin.*.err
ok "fuzz_fin: reductions = rank files" "${CHK[@]}" reduce "$T/fuzz_fin"
ok "fuzz_fin: run counters = rank records" "${CHK[@]}" counters "$T/fuzz_fin"
# an event after MPI_Finalize on a path first seen after it: its file
# lists that path apart (afterFinalize: no numbers, no id)
ok "fuzz_fin: every event names a path its rank file lists" "${CHK[@]}" pathrefs "$T/fuzz_fin"

# ---- offline = online, number for number ----
for name in np4 threads collide fuzz fuzz_fin; do
  mkdir -p "$T/off_$name"
  cp "$T/$name"/rank*.jsonl "$T/off_$name/"
  hb=()
  [ $name = collide ] && hb=(--hash-bits 4)
  "$COLLATE" -q "${hb[@]}" "$T/off_$name" 2>"$T/off_$name.err"
  ok "$name: offline summary = online summary (all but run end)" "${CHK[@]}" same "$T/$name" "$T/off_$name"
done
"$COLLATE" -q --no-summary --chrome "$T/off_fuzz_fin.chrome.json" "$T/off_fuzz_fin" 2>>"$T/off_fuzz_fin.err"
ok "fuzz_fin: the Chrome export names every event's path" "${CHK[@]}" pathrefs "$T/off_fuzz_fin" "$T/off_fuzz_fin.chrome.json"
# The run's end time is frozen when MPI_Finalize begins, so the rank files'
# endTs (rewritten with global ids after collation) equals the online one.
ok "np4: offline runtime = online runtime" "${CHK[@]}" runtime "$T/np4" "$T/off_np4"
ok "bad usage exits 2" bash -c "'$COLLATE' --bogus; [ \$? -eq 2 ]"
ok "empty folder exits 1" bash -c "mkdir -p '$T/empty'; '$COLLATE' -q '$T/empty' 2>/dev/null; [ \$? -eq 1 ]"
done_testing
