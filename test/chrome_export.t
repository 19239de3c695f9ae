#!/usr/bin/env bash
# chrome_export.t — collprof-collate --chrome on a real 4-rank replay run
# through the launcher, with a known clock skew injected per rank
# (COLLPROF_TEST_CLOCK_SKEW_NS): the file is valid Chrome trace JSON, one
# process per rank, every event/state/lifecycle record of the rank files is
# in it, slices of one track nest (what Perfetto requires), KernelCh sits on
# GPU tracks at its GPU times, and the timelines are aligned: the same
# collective (commId, func, seq) starts at about the same time on every
# rank in the export, while in the raw rank files it is off by the skew.
# The oracle is Python reading the rank files; it shares nothing with C.
. "$(dirname "$0")/tap.sh"
[ -n "${SAN:-}" ] && skip_all "mpirun with preloaded libraries under SAN=$SAN"
for x in collprof collprof-replay collprof-collate; do
  [ -x "$BIN/$x" ] || skip_all "no $BIN/$x"
done
[ -e "$LIB/libcollprof-mpi.so" ] || skip_all "no libcollprof-mpi.so"
files=("$FIX"/ag4_net/p*.jsonl)
[ -e "${files[0]}" ] || skip_all "no ag4_net fixture"
command -v python3 >/dev/null || skip_all "no python3"

# Skews far apart (seconds), so that "aligned" and "off by the skew" are
# told apart even on a loaded machine where ranks start replaying up to
# ~100 ms apart.
SKEW=0,2000000000,-1500000000,3000000000
"${MPIRUN[@]}" -np 4 -x COLLPROF_TEST_CLOCK_SKEW_NS=$SKEW \
  "$BIN/collprof" -q -o "$T/run" -e all -- "$BIN/collprof-replay" "${files[@]}" >"$T/mpi.out" 2>&1
rc=$?
is "$rc" 0 "4-rank replay through the launcher"
[ "$rc" -eq 0 ] || sed 's/^/# /' "$T/mpi.out" | tail -n 20
"$BIN/collprof-collate" -q "$T/run" --chrome "$T/trace.json" >"$T/collate.out" 2>&1
is "$?" 0 "collprof-collate --chrome"
ok "no complaints from collprof-collate" test ! -s "$T/collate.out"

cat >"$T/check.py" <<'EOF'
import json, sys, collections, statistics
run, trace, skews = sys.argv[1], sys.argv[2], [int(s) for s in sys.argv[3].split(',')]
failed = []
def check(cond, name, detail=''):
    print(('ok - ' if cond else 'FAIL - ') + name + ('' if cond else ': ' + str(detail)))
    if not cond: failed.append(name)

d = json.load(open(trace))                      # valid JSON at all
evs = d['traceEvents'] if isinstance(d, dict) else d
X = [e for e in evs if e.get('ph') == 'X']
I = [e for e in evs if e.get('ph') == 'i']
M = [e for e in evs if e.get('ph') == 'M']

# the rank files
ranks = {}
for r in range(4):
    recs = [json.loads(l) for l in open('%s/rank%d.jsonl' % (run, r))]
    rank = [x for x in recs if x['recordType'] == 'rank'][-1]
    clock = [x for x in recs if x['recordType'] == 'clock']
    paths = {p['local']: p for p in recs if p['recordType'] == 'path'}
    ranks[r] = dict(recs=recs, rank=rank, off=clock[-1]['offsetNs'] if clock else 0, paths=paths)
summ = json.load(open(run + '/summary.json'))
gid = {p['path']: p['id'] for p in summ['paths']}

# one process per rank, named with its host
pnames = {e['pid']: e['args']['name'] for e in M if e['name'] == 'process_name'}
check(sorted(pnames) == [1, 2, 3, 4], 'one process per rank (pid = rank + 1)', sorted(pnames))
check(all(pnames.get(r + 1, '').startswith('rank %d (%s' % (r, ranks[r]['rank']['host'])) for r in range(4)),
      'process names carry the rank and host', pnames)
check(sorted({e['pid'] for e in X + I}) == [1, 2, 3, 4], 'events only in rank processes')

# every record present
for r in range(4):
    recs = ranks[r]['recs']
    ev = [x for x in recs if x['recordType'] == 'event' and x['type'] != 'ProfilerLifecycle']
    lc = [x for x in recs if x['recordType'] == 'event' and x['type'] == 'ProfilerLifecycle']
    st = [x for x in recs if x['recordType'] == 'state']
    want = collections.Counter((x['type'].replace('ncclProfile', ''), x['func']) for x in ev)
    got = collections.Counter((e['cat'], e['name'].split(':', 1)[1] if ':' in e['name'] else '')
                              for e in X if e['pid'] == r + 1)
    check(want == got and sum(want.values()) > 0, 'rank %d: every event record is a slice (%d)' % (r, sum(want.values())),
          (want - got, got - want))
    check(len(st) == sum(1 for e in I if e['pid'] == r + 1 and e['cat'] == 'state'),
          'rank %d: every state record is an instant (%d)' % (r, len(st)))
    check(len(lc) == sum(1 for e in I if e['pid'] == r + 1 and e['cat'] == 'lifecycle'),
          'rank %d: lifecycle records present (%d)' % (r, len(lc)))
    # host events: ts = start.ts + offsetNs exactly (to the ns); dur = stop - start
    off = ranks[r]['off']
    host = [x for x in ev if x['type'] != 'ncclProfileKernelCh']
    xs = [e for e in X if e['pid'] == r + 1 and e['cat'] != 'KernelCh']
    want_ts = sorted(round(x['start']['ts'] * 1000) + off for x in host)
    got_ts = sorted(round(e['ts'] * 1000) for e in xs)
    check(len(want_ts) == len(got_ts) and all(abs(a - b) <= 1 for a, b in zip(want_ts, got_ts)),
          'rank %d: slice times = rank times + clock offset %d ns' % (r, off))
    # paths: local id -> string -> global id
    bad = [e for e in xs if e['args'].get('path') != ranks[r]['paths'][e['args']['localPath']]['path']
           or e['args'].get('pathId') != gid[e['args']['path']]]
    check(not bad, 'rank %d: slices carry their path and global id' % r, bad[:1])

# KernelCh: on GPU tracks, at GPU time - gpuOffsetNs + offsetNs
tname = {(e['pid'], e['tid']): e['args']['name'] for e in M if e['name'] == 'thread_name'}
kc = [e for e in X if e['cat'] == 'KernelCh']
check(len(kc) > 0, 'KernelCh slices exist (%d)' % len(kc))
check(all(tname.get((e['pid'], e['tid']), '').startswith('GPU') for e in kc), 'KernelCh on GPU tracks')
okgpu = True
for r in range(4):
    comms = {c['commId']: c for c in ranks[r]['rank']['comms']}
    want = []
    for x in ranks[r]['recs']:
        if x['recordType'] != 'event' or x['type'] != 'ncclProfileKernelCh': continue
        g = comms[x['commId']]['gpuOffsetNs']
        if g is None: continue
        t = x['details']['gpuStart'] - g + ranks[r]['off']
        want.append(t)
        # the offset is the minimum of gpuStart - host start: never before the host saw it
        okgpu &= t >= round(x['start']['ts'] * 1000) + ranks[r]['off'] - 1
    got = sorted(round(e['ts'] * 1000) for e in kc if e['pid'] == r + 1 and e['args'].get('gpuTime'))
    check(len(want) > 0 and len(got) == len(want) and all(abs(a - b) <= 1 for a, b in zip(sorted(want), got)),
          'rank %d: KernelCh at its GPU times on the host clock (%d)' % (r, len(want)))
check(okgpu, 'GPU-placed KernelCh never starts before its host start')

# slices of one track nest
tracks = collections.defaultdict(list)
for e in X: tracks[(e['pid'], e['tid'])].append((round(e['ts'] * 1000), round((e['ts'] + e['dur']) * 1000)))
bad = 0
for k, v in tracks.items():
    v.sort(key=lambda a: (a[0], -a[1]))
    stack = []
    for a, b in v:
        while stack and stack[-1] <= a: stack.pop()
        if stack and b > stack[-1]: bad += 1
        stack.append(b)
check(bad == 0, 'slices of every track nest (Perfetto)', bad)

# alignment: the same collective across ranks
def coll_starts(items):
    return {k: t for k, t in items}
exp = {r: {(e['args']['commId'], e['name'], e['args']['details']['seq']): e['ts'] * 1000
           for e in X if e['pid'] == r + 1 and e['cat'] == 'Coll'} for r in range(4)}
raw = {r: {(x['commId'], 'Coll:' + x['func'], x['details']['seq']): x['start']['ts'] * 1000
           for x in ranks[r]['recs'] if x['recordType'] == 'event' and x['type'] == 'ncclProfileColl'}
       for r in range(4)}
tol = 250e6
for r in range(1, 4):
    keys = sorted(set(exp[0]) & set(exp[r]))
    check(len(keys) >= 10, 'rank %d: %d collectives in common with rank 0' % (r, len(keys)))
    if not keys: continue
    da = statistics.median(exp[r][k] - exp[0][k] for k in keys)
    dr = statistics.median(raw[r][k] - raw[0][k] for k in keys)
    skew = skews[r] - skews[0]
    check(abs(da) < tol, 'rank %d: aligned in the export (median %.3f ms, skew %.0f ms)' % (r, da / 1e6, skew / 1e6))
    check(abs(dr - skew) < tol, 'rank %d: raw rank files off by the skew (median %.3f ms)' % (r, dr / 1e6))
sys.exit(1 if failed else 0)
EOF
python3 "$T/check.py" "$T/run" "$T/trace.json" "$SKEW" >"$T/check.out" 2>&1
prc=$?
tap_from_checker "$T/check.out"
is "$prc" 0 "checker finished"
done_testing
