#!/usr/bin/env bash
# folded.t — collprof-collate --folded: one "A;B;C <ns>" line per global
# path, its value the path's self time summed over ranks, so the lines sum
# to the summary's total self time and to what the rank files hold.  Runs
# on a 4-rank MPI replay (online summary) and on a process without MPI
# (offline summary, as under torchrun).  Python is the oracle.
. "$(dirname "$0")/tap.sh"
for x in collprof collprof-replay collprof-collate; do
  [ -x "$BIN/$x" ] || skip_all "no $BIN/$x"
done
files=("$FIX"/ag4_net/p*.jsonl)
[ -e "${files[0]}" ] || skip_all "no ag4_net fixture"

cat >"$T/check.py" <<'EOF'
import json, re, sys, glob
run, folded = sys.argv[1], sys.argv[2]
summ = json.load(open(run + '/summary.json'))
lines = open(folded).read().splitlines()
bad = [l for l in lines if not re.fullmatch(r'[^ ;]+(;[^ ;]+)* \d+', l)]
assert not bad, 'malformed lines: %r' % bad[:3]
got = {l.rsplit(' ', 1)[0]: int(l.rsplit(' ', 1)[1]) for l in lines}
assert len(got) == len(lines) == len(summ['paths']), (len(got), len(lines), len(summ['paths']))
want = {p['path'].replace('/', ';'): p['self_ns'] for p in summ['paths']}
assert got == want, 'values differ from summary.json self_ns'
total = sum(got.values())
assert total == summ['self_total_ns'], (total, summ['self_total_ns'])
# independent of the summary: the path records of the rank files
own = 0
for f in glob.glob(run + '/rank*.jsonl') + glob.glob(run + '/pid*.jsonl'):
    own += sum(r['self_ns'] for r in map(json.loads, open(f)) if r['recordType'] == 'path')
assert total == own, (total, own)
assert total > 0
print('%d paths, %d ns' % (len(lines), total))
EOF

if [ -n "${SAN:-}" ]; then
  skip "4-rank mpirun under SAN=$SAN"
  skip "4-rank mpirun under SAN=$SAN"
else
  "${MPIRUN[@]}" -np 4 "$BIN/collprof" -q -o "$T/run" -- "$BIN/collprof-replay" "${files[@]}" >"$T/mpi.out" 2>&1
  is "$?" 0 "4-rank replay through the launcher"
  "$BIN/collprof-collate" -q --no-summary "$T/run" --folded "$T/stacks.folded" >"$T/c.out" 2>&1 &&
    python3 "$T/check.py" "$T/run" "$T/stacks.folded" >>"$T/c.out" 2>&1
  rc=$?
  is "$rc" 0 "MPI run: folded lines = paths, values = self_ns, sum = self_total_ns"
  [ $rc -eq 0 ] || sed 's/^/# /' "$T/c.out" | tail -n 5
fi

# Without MPI: the plugin's own file at exit, collated offline.
if [ -n "${SAN:-}" ]; then
  skip "preloading a sanitized library under SAN=$SAN"
  skip "preloading a sanitized library under SAN=$SAN"
else
  "$BIN/collprof" -q --no-mpi -o "$T/solo" -- "$BIN/collprof-replay" "${files[0]}" >"$T/solo.out" 2>&1
  is "$?" 0 "replay without MPI through the launcher"
  "$BIN/collprof-collate" -q "$T/solo" --folded - >"$T/solo.folded" 2>"$T/c2.out" &&
    python3 "$T/check.py" "$T/solo" "$T/solo.folded" >>"$T/c2.out" 2>&1
  rc=$?
  is "$rc" 0 "offline: folded to stdout matches the offline summary"
  [ $rc -eq 0 ] || sed 's/^/# /' "$T/c2.out" | tail -n 5
fi
done_testing
