#!/usr/bin/env bash
# html_report.t — collprof-collate --html on a 4-rank replay run, loaded in
# headless Chromium: the page is self-contained (no network, no external
# scripts or styles), its script ran and the console stayed silent, the
# DOM has one bar per rank and top path with the rank's own time of that
# path (from the rank files), and the table and summary numbers equal
# summary.json.  A screenshot goes to $T (and to $COLLPROF_SCREENSHOT when
# set, to look at).  The numbers are compared with the summary.json that
# the same collprof-collate call writes.  Python (html.parser) is the oracle.
. "$(dirname "$0")/tap.sh"
[ -n "${SAN:-}" ] && skip_all "mpirun with preloaded libraries under SAN=$SAN"
CHROME=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$CHROME" ] || skip_all "no chromium (share/install-deps.sh installs it)"
for x in collprof collprof-replay collprof-collate; do
  [ -x "$BIN/$x" ] || skip_all "no $BIN/$x"
done
[ -e "$LIB/libcollprof-mpi.so" ] || skip_all "no libcollprof-mpi.so"
files=("$FIX"/ag4_net/p*.jsonl)
[ -e "${files[0]}" ] || skip_all "no ag4_net fixture"
TOPN=5

"${MPIRUN[@]}" -np 4 "$BIN/collprof" -q -o "$T/run" -- "$BIN/collprof-replay" "${files[@]}" >"$T/mpi.out" 2>&1
is "$?" 0 "4-rank replay through the launcher"
"$BIN/collprof-collate" -q "$T/run" --html "$T/report.html" --top $TOPN --sizes "$T/sizes.txt" >"$T/c.out" 2>&1
is "$?" 0 "collprof-collate --html (and --sizes)"
ok "report written" test -s "$T/report.html"
ok "self-contained: no src/href/link/import/url(), no address but the SVG namespace" bash -c "
  ! grep -Eiq '<link|<iframe|<img|@import|url\\(| src=| href=' '$T/report.html' &&
  [ -z \"\$(grep -Eo 'https?://[^\" ]*' '$T/report.html' | grep -v '^http://www.w3.org/2000/svg\$')\" ]"

run_chrome() { # args...; stdout/stderr to files; no network reachable anyway
  HOME=$T timeout 120 "$CHROME" --headless --disable-gpu --no-sandbox --no-first-run \
    --user-data-dir="$T/chrome" --enable-logging=stderr --v=0 "$@"
}
run_chrome --dump-dom "file://$T/report.html" >"$T/dom.html" 2>"$T/chrome.err"
is "$?" 0 "chromium loads the report"
ok "its script ran (body data-ready=1)" grep -q '<body[^>]*data-ready="1"' "$T/dom.html"
ok "no console messages or errors" bash -c "! grep -E 'CONSOLE|Uncaught' '$T/chrome.err'"
grep -E 'CONSOLE|Uncaught' "$T/chrome.err" | head -n 5 | sed 's/^/# /'

cat >"$T/check.py" <<'EOF'
import json, sys, glob
from html.parser import HTMLParser
run, dom, topn = sys.argv[1], sys.argv[2], int(sys.argv[3])
summ = json.load(open(run + '/summary.json'))
sys.path.insert(0, sys.argv[5])
import sizes_oracle
class P(HTMLParser):
    def __init__(s):
        super().__init__(); s.bars = []; s.rows = []; s.cells = []; s.kv = []; s.row = None
        s.figs = []; s.lo = None   # message sizes: [(path id, {lo: {key: value}})]
    def handle_starttag(s, tag, a):
        a = dict(a)
        if tag == 'figure' and 'data-sizes-path' in a: s.figs.append((int(a['data-sizes-path']), {}))
        if tag == 'tr' and 'data-lo' in a:
            s.lo = int(a['data-lo']); s.figs[-1][1][s.lo] = {}
        if tag == 'td' and 'data-key' in a and s.lo is not None: s.figs[-1][1][s.lo][a['data-key']] = a['data-value']
        if tag == 'rect' and 'bar' in (a.get('class') or '').split(): s.bars.append(a)
        if tag == 'tr' and 'data-path' in a:
            s.row = int(a['data-path']); s.rows.append(s.row)
        if tag == 'td' and 'data-key' in a and s.row is not None:
            s.cells.append((s.row, a['data-key'], a['data-value']))
        if tag == 'b' and 'data-key' in a: s.kv.append((a['data-key'], a['data-value']))
    def handle_endtag(s, tag):
        if tag == 'tr': s.row = s.lo = None
p = P(); p.feed(open(dom).read())
failed = []
def check(c, name, detail=''):
    print(('ok - ' if c else 'FAIL - ') + name + ('' if c else ': ' + str(detail)[:300]))
    if not c: failed.append(name)

paths = {q['id']: q for q in summ['paths']}
top = [q['id'] for q in sorted(summ['paths'], key=lambda q: (-q['total_ns'], q['id']))][:topn]
check(p.rows == top, 'table rows are the top %d paths by total time, in order' % topn, (p.rows, top))
# the ranks' own numbers, from their files
own = {}
for f in glob.glob(run + '/rank*.jsonl'):
    recs = [json.loads(l) for l in open(f)]
    r = [x for x in recs if x['recordType'] == 'rank'][-1]['rank']
    for x in recs:
        if x['recordType'] == 'path':
            own[(r, x['path'])] = own.get((r, x['path']), 0) + x['total_ns']
nranks = summ['ranks']
pairs = [(int(b['data-rank']), int(b['data-path'])) for b in p.bars]
want = [(r, i) for i in top for r in range(nranks)]
check(sorted(pairs) == sorted(want), 'one bar per rank (%d) and top path (%d)' % (nranks, len(top)),
      (len(pairs), len(want)))
bad = []
for b in p.bars:
    r, i = int(b['data-rank']), int(b['data-path'])
    v = own.get((r, paths[i]['path']))
    got = None if b.get('data-absent') == '1' else int(b['data-ns'])
    if got != v: bad.append((r, i, got, v))
check(not bad, "each bar is the rank's total time of the path (rank files)", bad)
# bars agree with summary.json's per-rank min/max and sum
for i in top:
    vals = [int(b['data-ns']) for b in p.bars if int(b['data-path']) == i and b.get('data-absent') != '1']
    q = paths[i]
    check(sum(vals) == q['total_ns'] and min(vals) == q['min_ns'] and max(vals) == q['max_ns']
          and len(vals) == q['nranks'], 'path %d: bars sum to total_ns, min/max = min_ns/max_ns' % i)
# table cells = summary.json
bad = []
for row, key, val in p.cells:
    j = paths[row].get(key)
    if isinstance(j, float) or '.' in val:
        if j is None or abs(float(val) - float(j)) > 1e-6 * max(1.0, abs(float(j))): bad.append((row, key, val, j))
    elif j is None or int(val) != j: bad.append((row, key, val, j))
check(len(p.cells) >= 10 * len(top) and not bad, 'table numbers equal summary.json (%d cells)' % len(p.cells), bad)
bad = [(k, v, summ.get(k)) for k, v in p.kv if str(summ.get(k)) != v]
check(len(p.kv) >= 10 and not bad, 'run summary numbers equal summary.json (%d)' % len(p.kv), bad)
# message sizes: the Coll/P2p paths with the most GPU time, as --sizes has them
text = sizes_oracle.parse(sys.argv[4])
byname = {q['path']: q for q in summ['paths']}
want = sorted((byname[n] for n in text), key=lambda q: (-q['gpu_est_ns'], q['id']))[:topn]
check(len(want) > 0 and [i for i, _ in p.figs] == [q['id'] for q in want],
      'message sizes: the %d Coll/P2p paths with the most GPU time, in order' % len(want),
      ([i for i, _ in p.figs], [q['id'] for q in want]))
bad, n = [], 0
for i, rows in p.figs:
    t = text[paths[i]['path']]
    if sorted(rows) != sorted(t): bad.append((i, sorted(rows), sorted(t))); continue
    for lo, c in rows.items():
        n += 1
        w = t[lo]
        num = lambda v: None if v == '' else float(v)
        if (int(c['calls']), int(c['samples'])) != (w['calls'], w['samples']): bad.append((i, lo, c, w))
        for k, tk, scale in (('call_ns', 'per_us', 1e3), ('busbw_gbs', 'bus', 1.0), ('gpu_ns', 'gpu_s', 1e9)):
            g, e = num(c[k]), w[tk]
            if (g is None) != (e is None) or (g is not None and abs(g / scale - e) > 6e-4 * (1 if k != 'gpu_ns' else 1e-3)):
                bad.append((i, lo, k, g, e))
check(n > 0 and not bad, 'message sizes: each class row equals the --sizes text (%d rows)' % n, bad)
sys.exit(1 if failed else 0)
EOF
python3 "$T/check.py" "$T/run" "$T/dom.html" $TOPN "$T/sizes.txt" "$TOP/test" >"$T/check.out" 2>&1
prc=$?
tap_from_checker "$T/check.out"
is "$prc" 0 "DOM checker finished"

run_chrome --hide-scrollbars --window-size=1280,1400 --screenshot="$T/report.png" \
  "file://$T/report.html" >/dev/null 2>&1
ok "screenshot taken" bash -c "[ \$(head -c 8 '$T/report.png' | od -An -tx1 | tr -d ' ') = 89504e470d0a1a0a ] && [ \$(stat -c %s '$T/report.png') -gt 20000 ]"
if [ -n "${COLLPROF_SCREENSHOT:-}" ] && [ -s "$T/report.png" ]; then
  cp "$T/report.png" "$COLLPROF_SCREENSHOT" && diag "screenshot copied to $COLLPROF_SCREENSHOT"
fi
done_testing
